"""Which switch of which fabric, and which of its ports are cabled, from plan.doc fabrics[].switches/links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SONIC_LANES_PER_PORT = 8  # Spectrum-4 SONiC names front-panel port p as Ethernet{8*(p-1)} (no breakout)


@dataclass(frozen=True)
class SwitchPorts:
    name: str
    fabric: str
    fabric_type: str
    role: str
    model: str
    ports: tuple[int, ...]  # plan port numbers (1-based) that carry a cable
    peers: dict[int, str]  # port -> device on the other end


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
        )
    return out


def sonic_port(port: int) -> str:
    return f"Ethernet{SONIC_LANES_PER_PORT * (port - 1)}"


def cumulus_port(port: int) -> str:
    return f"swp{port}"
