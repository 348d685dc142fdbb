"""What one node is checked against, read from plan.json (never hard-coded in a validator)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.plan.desired_fabric import fabric_entry, rail_neighbours
from clusterforge.plan.desired_version import DESIRED_VERSION  # the version plan/desired.py writes


@dataclass(frozen=True)
class Rail:
    index: int
    hca: str
    port: int
    netdev: str
    gpu: int
    numa: int
    ip: str
    prefix: int
    mtu: int
    link_layer: str
    speed_gbps: int
    pci: str
    gpu_link: str | None

    @classmethod
    def of(cls, r: dict[str, Any]) -> Rail:
        return cls(
            index=int(r["index"]),
            hca=r["hca"],
            port=int(r.get("port", 1)),
            netdev=r["netdev"],
            gpu=int(r["gpu"]),
            numa=int(r["numa"]),
            ip=r["ip"],
            prefix=int(r["prefix"]),
            mtu=int(r["mtu"]),
            link_layer=r["link_layer"],
            speed_gbps=int(r["speed_gbps"]),
            pci=str(r.get("pci", "")),
            gpu_link=r.get("gpu_link"),
        )


@dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    unit: str
    source: str

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit} ({self.source})"


@dataclass(frozen=True)
class NodeExpect:
    """A node's expectations: its plan entry, its SKU, and the cluster-wide policy it is held to."""

    name: str
    pool: str
    sku_name: str
    fabric: str
    fabric_type: str  # roce | infiniband
    mgmt_ip: str
    mgmt_netdev: str
    digest: str
    rails: tuple[Rail, ...]
    sku: dict[str, Any]
    tuning: dict[str, Any]
    certification: dict[str, Any]
    cluster: str
    plan_hash: str
    knobs: dict[str, Any] = field(default_factory=dict)  # role knobs from group_vars beside plan.json
    # the node's compiled desired state (plan/desired.py): what the roles apply, certified as it is
    desired_state: dict[str, Any] = field(default_factory=dict)
    bmc: dict[str, Any] = field(default_factory=dict)  # the plan's `bmc` (address, vendor); {} when none
    # plan.json's own entries (shared, not copied): the node and its fabric, for the cabling expectations
    plan_node: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    plan_fabric: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def roce(self) -> bool:
        return self.fabric_type == "roce"

    @property
    def gpu(self) -> dict[str, Any]:
        return dict(self.sku["gpu"])

    @property
    def nvswitch(self) -> bool:
        return bool(self.sku["gpu"].get("nvswitch"))

    @property
    def timeout(self) -> int:
        return int(self.certification.get("check_timeout_s", 60))

    @property
    def perf_attempts(self) -> int:
        return int(self.certification.get("perf_attempts", 3))

    @property
    def desired(self) -> dict[str, Any]:
        """The compiled desired state; KeyError for a plan.json compiled before it existed."""
        if self.desired_state.get("version") != DESIRED_VERSION:
            raise KeyError(
                f"plan.json has no {DESIRED_VERSION} desired state for {self.name} "
                f"(found {self.desired_state.get('version')!r}): re-run `clusterforge plan`"
            )
        return self.desired_state

    @property
    def pins(self) -> dict[str, Any]:
        """The software pins and pinned packages of the compiled desired state (plan/desired_software.py);
        KeyError for a plan.json compiled before they were."""
        section = self.desired.get("software")
        if not isinstance(section, dict) or "packages" not in section:
            raise KeyError(
                f"plan.json has no software pins in {self.name}'s desired state (`desired.software`, a plan "
                "compiled before they were): re-run `clusterforge plan`"
            )
        return section

    def rail_desired(self, index: int) -> dict[str, Any]:
        """The desired state of rail ``index`` (netdev and port MTU, QoS)."""
        return dict(next(r for r in self.desired["rails"] if int(r["index"]) == index))

    @property
    def rail_neighbours(self) -> list[dict[str, Any]]:
        """Per rail, the switch and port its cable must reach (plan/desired_fabric.py); KeyError when
        plan.json has no fabric entry for the node."""
        if not self.plan_fabric:
            raise KeyError(
                f"plan.json has no fabric {self.fabric!r} for {self.name}: re-run `clusterforge plan`"
            )
        try:
            return rail_neighbours(self.plan_node)
        except KeyError as exc:
            raise KeyError(
                f"plan.json's rails of {self.name} have no {exc.args[0]} (a plan compiled before each rail's "
                "leaf port name and cable ID were): re-run `clusterforge plan`"
            ) from None

    def rail(self, index: int) -> Rail:
        return next(r for r in self.rails if r.index == index)

    def threshold(self, name: str) -> Threshold:
        t = self.sku.get("thresholds", {}).get(name)
        if not isinstance(t, dict) or "value" not in t:
            raise KeyError(f"SKU {self.sku_name} declares no threshold {name!r}")
        return Threshold(name, float(t["value"]), str(t.get("unit", "")), str(t.get("source", "catalog")))


def read_plan_json(path: Path | str) -> dict[str, Any]:
    """A plan.json as written by `clusterforge plan` (checked for the keys every reader needs)."""
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    for key in ("nodes", "skus", "tuning", "software", "certification", "plan_hash"):
        if key not in doc:
            raise ValueError(f"{path}: not a clusterforge plan.json (no {key!r})")
    return doc


def _group_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import yaml  # here: the node checker passes the knobs as JSON and carries no YAML parser

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml if built
    data = yaml.load(path.read_text(), Loader=loader) or {}  # a safe loader (C or Python)
    return {k: v for k, v in data.items() if not (isinstance(v, str) and "{{" in v)}


def group_vars(
    folder: Path, node: dict[str, Any], cache: dict[Path, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The role knobs that apply to ``node`` from ``group_vars/`` (all, fabric type, SKU), later wins.

    Values that are Jinja templates are left out: the plan gives their resolved meaning directly.
    ``cache`` (file -> its knobs) lets many nodes share one read of each file.
    """
    names = ["all", f"fabric_type_{node['fabric_type']}", "sku_" + node["sku"].replace("-", "_")]
    cache = {} if cache is None else cache
    out: dict[str, Any] = {}
    for name in names:
        path = folder / "group_vars" / f"{name}.yml"
        if path not in cache:
            cache[path] = _group_file(path)
        out.update(cache[path])
    return out


def node_expect(doc: dict[str, Any], node: dict[str, Any], knobs: dict[str, Any] | None = None) -> NodeExpect:
    return NodeExpect(
        name=node["name"],
        pool=node["pool"],
        sku_name=node["sku"],
        fabric=node["fabric"],
        fabric_type=node["fabric_type"],
        mgmt_ip=node["mgmt_ip"],
        mgmt_netdev=node["mgmt_netdev"],
        digest=node["expectation_digest"],
        rails=tuple(Rail.of(r) for r in node["rails"]),
        sku=doc["skus"][node["sku"]],
        tuning=doc["tuning"],
        certification=doc["certification"],
        cluster=doc["cluster"],
        plan_hash=doc["plan_hash"],
        knobs=dict(knobs or {}),
        desired_state=dict(node.get("desired") or {}),
        bmc=dict(node.get("bmc") or {}),
        plan_node=node,
        plan_fabric=fabric_entry(doc, node["fabric"]) or {},
    )


def nodes_of(
    doc: dict[str, Any],
    folder: Path | None = None,
    names: Iterable[str] | None = None,
    knobs: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, NodeExpect]:
    """The plan's nodes by name, in plan order (only ``names`` when given); ``folder`` (the inventory)
    adds the role knobs, or ``knobs`` gives them per node as read there (`knobs_of`; the node checker's
    job carries them). Each group_vars file is read once, however many nodes share it: the validators
    run one process per node, so reading every node's files in each would grow with the square of the
    cluster."""
    wanted = None if names is None else set(names)
    cache: dict[Path, dict[str, Any]] = {}

    def node_knobs(n: dict[str, Any]) -> dict[str, Any] | None:
        if knobs is not None:
            return dict(knobs.get(n["name"]) or {})
        return group_vars(folder, n, cache) if folder else None

    return {
        n["name"]: node_expect(doc, n, node_knobs(n))
        for n in doc["nodes"]
        if wanted is None or n["name"] in wanted
    }
