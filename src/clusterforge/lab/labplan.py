"""What the lab needs from plan.json (docs/contracts.md): nodes, their management and rail links, pools."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import InputError, Problem
from clusterforge.lab import config, names


@dataclass(frozen=True)
class Rail:
    index: int
    netdev: str
    mac: str
    host_link: str
    bridge: str


@dataclass(frozen=True)
class LabNode:
    name: str
    ordinal: int
    pool: str
    sku: str
    fabric: str
    fabric_type: str
    mgmt_ip: str
    mgmt_netdev: str
    mgmt_mac: str
    mgmt_host_link: str
    netns: str
    # the default route the lab configures in the node, as the site's installer would (the plan's desired
    # management gateway: the host's bridge address, or None for no default route)
    mgmt_gateway: str | None
    rails: tuple[Rail, ...]
    raw: dict[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True)
class LabPlan:
    cluster: str
    nodes: tuple[LabNode, ...]
    raw: dict[str, Any] = field(compare=False, repr=False)

    def node(self, name: str) -> LabNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise InputError(
            [
                Problem(
                    "plan.json",
                    "nodes",
                    f"one of {[n.name for n in self.nodes]}",
                    repr(name),
                    "name a node of the plan",
                )
            ],
            "unknown lab node",
        )

    @property
    def pools(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            out.setdefault(n.pool, []).append(n.name)
        return out

    def sku(self, name: str) -> dict[str, Any]:
        skus = self.raw.get("skus") or {}
        if isinstance(skus, dict):
            return dict(skus.get(name) or {})
        return next((dict(s) for s in skus if isinstance(s, dict) and s.get("name") == name), {})


def _problem(path: str, expected: str, found: object) -> Problem:
    return Problem(
        "plan.json", path, expected, repr(found), "regenerate the plan with `clusterforge plan SPEC`"
    )


def _node(cluster: str, i: int, d: dict[str, Any], problems: list[Problem]) -> LabNode | None:
    name = str(d.get("name", ""))
    ordinal = int(d.get("ordinal", i))
    mgmt_ip = str(d.get("mgmt_ip", ""))
    try:
        if ipaddress.IPv4Address(mgmt_ip) not in ipaddress.IPv4Network(config.MGMT_NETWORK):
            raise ValueError
        if mgmt_ip == config.HOST_IP:
            raise ValueError
    except ValueError:
        problems.append(
            _problem(
                f"nodes[{i}].mgmt_ip",
                f"a host address of {config.MGMT_NETWORK} other than {config.HOST_IP}",
                mgmt_ip,
            )
        )
        return None
    if not name or len(name) > 63:
        problems.append(_problem(f"nodes[{i}].name", "a host name", name))
        return None
    gateway = _gateway(d)
    if gateway is not None and gateway != config.HOST_IP:
        problems.append(
            _problem(
                f"nodes[{i}].desired.management.gateway",
                f"the lab host's bridge address {config.HOST_IP} (the only router on {config.MGMT_BRIDGE}) "
                "or none (addressing.gateway in the spec)",
                gateway,
            )
        )
        return None
    fabric = str(d.get("fabric") or "none")
    rails = []
    for r in d.get("rails") or []:
        idx = int(r["index"])
        rails.append(
            Rail(
                idx,
                str(r["netdev"]),
                str(r.get("mac") or names.lab_mac(1 + idx, ordinal)),
                names.host_link(cluster, name, idx),
                names.rail_bridge(fabric, idx),
            )
        )
    return LabNode(
        name=name,
        ordinal=ordinal,
        pool=str(d.get("pool", "default")),
        sku=str(d.get("sku", "")),
        fabric=fabric,
        fabric_type=str(d.get("fabric_type", "")),
        mgmt_ip=mgmt_ip,
        mgmt_netdev=str(d.get("mgmt_netdev") or "mgmt0"),
        mgmt_mac=str(d.get("mgmt_mac") or names.lab_mac(0, ordinal)),
        mgmt_host_link=names.host_link(cluster, name, None),
        netns=names.netns_name(cluster, name),
        mgmt_gateway=gateway,
        rails=tuple(rails),
        raw=dict(d),
    )


def _gateway(d: dict[str, Any]) -> str | None:
    """The node's desired default gateway (plan.json `desired.management.gateway`); None when the plan
    declares none or predates it."""
    mgmt = (d.get("desired") or {}).get("management") or {}
    gw = mgmt.get("gateway") if isinstance(mgmt, dict) else None
    return str(gw) if gw else None


def node_of(cluster: str, raw: dict[str, Any]) -> LabNode | None:
    """One node of a plan (a running node's `node-plan.json`); None when it is not usable."""
    return _node(cluster, 0, raw, [])


def l2_identity(node: LabNode) -> set[tuple[str, str]]:
    """(bridge, address) pairs that must be unique on the host's bridges, which every lab on the host
    shares: the management address and MAC, each veth's host-end MAC and each rail's MAC on its bridge. Two
    nodes with one MAC on a bridge make it forward that node's frames to whichever spoke last."""
    mgmt = config.MGMT_BRIDGE
    pairs = {(mgmt, node.mgmt_ip), (mgmt, node.mgmt_mac), (mgmt, names.lab_mac(0, node.ordinal, True))}
    for r in node.rails:
        pairs |= {(r.bridge, r.mac), (r.bridge, names.lab_mac(1 + r.index, node.ordinal, True))}
    return pairs


def parse(raw: dict[str, Any]) -> LabPlan:
    problems: list[Problem] = []
    cluster = str(raw.get("cluster") or "")
    if not cluster or "/" in cluster:
        problems.append(_problem("cluster", "a cluster name", cluster))
    nodes = [n for i, d in enumerate(raw.get("nodes") or []) if (n := _node(cluster, i, d, problems))]
    if not nodes and not problems:
        problems.append(_problem("nodes", "at least one node", []))
    seen: dict[str, str] = {}
    for n in nodes:
        for key in (n.name, n.mgmt_ip, n.mgmt_mac, n.mgmt_host_link):
            if key in seen:
                problems.append(_problem(f"nodes[{n.name}]", "unique names, addresses and MACs", key))
            seen[key] = n.name
    if problems:
        raise InputError(problems, "plan not usable for the lab")
    return LabPlan(cluster, tuple(nodes), raw)


def _plan_from_spec(spec: Path) -> Path:
    """Run `clusterforge plan SPEC` and return the plan.json it writes."""
    meta = (yaml.safe_load(spec.read_text()) or {}).get("metadata") or {}
    cluster = meta.get("name") or spec.stem
    exe = Path(sys.executable).with_name("clusterforge")
    argv = [str(exe)] if exe.exists() else [shutil.which("clusterforge") or "clusterforge"]
    subprocess.run([*argv, "plan", str(spec)], check=True, env=os.environ.copy())
    out = Path("inventory/generated") / str(cluster) / "plan.json"
    if not out.exists():
        raise InputError(
            [
                Problem(
                    str(spec),
                    "",
                    "a plan written to " + str(out),
                    "none",
                    "run `clusterforge plan SPEC` and pass --plan",
                )
            ],
            "no plan",
        )
    return out


def load(source: str | Path | dict[str, Any] | LabPlan) -> LabPlan:
    """A plan.json path, a spec YAML path (planned on the fly), a plan dict or an already parsed LabPlan."""
    if isinstance(source, LabPlan):
        return source
    if isinstance(source, dict):
        return parse(source)
    path = Path(source)
    if path.suffix in (".yaml", ".yml"):
        path = _plan_from_spec(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise InputError(
            [Problem(str(path), "", "a readable plan.json", str(e), "run `clusterforge plan SPEC` first")],
            "no plan",
        ) from e
    return parse(raw)
