"""Which switch of which fabric, and which of its ports are cabled, from plan.doc fabrics[].switches/links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterforge.spec.netcatalog import PortNaming

SONIC_LANES_PER_PORT = 8  # models not in the network catalog: port p is Ethernet{8*(p-1)} (no breakout)


@dataclass(frozen=True)
class SwitchPorts:
    name: str
    fabric: str
    fabric_type: str
    role: str
    model: str
    ports: tuple[int, ...]  # plan port numbers (1-based) that carry a cable
    peers: dict[int, str]  # port -> device on the other end
    port_speed_gbps: int = 0


def switch_entry(plan_doc: dict[str, Any], switch: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fabric doc, switch as a field->value dict); ValueError naming the plan's switches if unknown."""
    for f in plan_doc["fabrics"]:
        for s in f["switches"]:
            if s[0] == switch:
                return f, dict(zip(f["switch_fields"], s, strict=True))
    known = [s[0] for f in plan_doc["fabrics"] for s in f["switches"]][:6]
    raise ValueError(f"no switch {switch!r} in plan {plan_doc.get('cluster')!r} (e.g. {', '.join(known)})")


def switch_ports(plan_doc: dict[str, Any], switch: str) -> SwitchPorts:
    f, _ = switch_entry(plan_doc, switch)
    return fabric_switch_ports(f)[switch]


def fabric_switch_ports(fabric: dict[str, Any]) -> dict[str, SwitchPorts]:
    """Every switch of one fabric doc with its cabled ports, in one pass over the links."""
    idx = {k: i for i, k in enumerate(fabric["link_fields"])}
    peers: dict[str, dict[int, str]] = {s[0]: {} for s in fabric["switches"]}
    for link in fabric["links"]:
        a, b = link[idx["a_dev"]], link[idx["b_dev"]]
        if a in peers:
            peers[a][int(link[idx["a_port"]])] = str(b)
        if b in peers:
            peers[b][int(link[idx["b_port"]])] = str(a)
    out = {}
    for s in fabric["switches"]:
        role = dict(zip(fabric["switch_fields"], s, strict=True))["role"]
        p = peers[s[0]]
        out[s[0]] = SwitchPorts(
            name=s[0],
            fabric=fabric["name"],
            fabric_type=fabric["type"],
            role=str(role),
            model=str(fabric["switch_model"]),
            ports=tuple(sorted(p)),
            peers=p,
            port_speed_gbps=int(fabric.get("port_speed_gbps") or 0),
        )
    return out


def sonic_port(port: int, model: str = "", speed: int = 0) -> str:
    """SONiC name of plan port `port`: the catalog's (e.g. SN5600 at 2x400G per cage: Ethernet0, Ethernet4),
    the same naming as cables.csv; Ethernet{8*(port-1)} for a model the catalog does not know."""
    naming = PortNaming(model, speed, "sonic") if _has_os(model, speed, "sonic") else None
    return naming.ref(port).name if naming else f"Ethernet{SONIC_LANES_PER_PORT * (port - 1)}"


def cumulus_port(port: int, model: str = "", speed: int = 0) -> str:
    """Cumulus name of plan port `port`: the catalog's (swp<cage>s<sub> on split cages), as in cables.csv;
    swp{port} for a model the catalog does not know."""
    naming = PortNaming(model, speed, "cumulus") if _has_os(model, speed, "cumulus") else None
    return naming.ref(port).name if naming else f"swp{port}"


def _has_os(model: str, speed: int, os: str) -> bool:
    n = PortNaming(model, speed)
    return n.known and n.spec is not None and os in n.spec.port_names
