"""The links the plan says the compute fabrics have, keyed the way discovery reports them.

Node-to-leaf links come from the cabling sheet's per-node rail expectations (`plan.cabling.node_rails`),
switch-to-switch links from the sheet's `leaf-spine` / `spine-core` cables; both carry the sheet's cable
IDs, port names and rack/U locations.
"""

from __future__ import annotations

from clusterforge.fabric.model import End, ExpectedLink
from clusterforge.plan.build import Plan
from clusterforge.plan.cabling import CableSheet, RailCable, cable_sheet, node_rails

SWITCH_KINDS = ("leaf-spine", "spine-core")


def fabric_types(plan: Plan) -> dict[str, str]:
    """Compute fabric name -> infiniband | roce."""
    return {f.name: f.type for f in plan.spec.cluster.fabrics.compute}


def rail_links(plan: Plan, node: str, sheet: CableSheet, fabric: str, ib: bool) -> list[ExpectedLink]:
    """The expected rail cables of one node (the per-node cabling check uses the same values)."""
    return [_rail(rc, node, fabric, ib) for rc in node_rails(plan, node, sheet)]


def _rail(rc: RailCable, node: str, fabric: str, ib: bool) -> ExpectedLink:
    a = End(node, rc.hca if ib else rc.node_port)
    b = End(rc.switch, str(rc.switch_port) if ib else rc.switch_port_name)
    return ExpectedLink(
        rc.cable_id,
        "node-leaf",
        fabric,
        a,
        b,
        rc.node_port,
        rc.switch_port_name,
        rc.node_location,
        rc.switch_location,
        rc.speed_gbps,
        "4x" if ib else "",
    )


def expected_links(plan: Plan, sheet: CableSheet | None = None) -> list[ExpectedLink]:
    """Every compute-fabric link of `plan`: node-leaf (per node, rail order), then leaf-spine, spine-core."""
    sheet = sheet or cable_sheet(plan)
    types = fabric_types(plan)
    nodes_of: dict[str, list[str]] = {}
    for c in sheet.cables:
        if c.kind == "node-leaf" and c.fabric in types and c.a_port == 0:
            nodes_of.setdefault(c.fabric, []).append(c.a_device)
    out: list[ExpectedLink] = []
    for fabric, nodes in nodes_of.items():
        ib = types[fabric] == "infiniband"
        for node in nodes:
            out.extend(rail_links(plan, node, sheet, fabric, ib))
    for c in sheet.cables:
        if c.kind in SWITCH_KINDS and c.fabric in types:
            ib = types[c.fabric] == "infiniband"
            a = End(c.a_device, str(c.a_port) if ib else c.a_port_name)
            b = End(c.b_device, str(c.b_port) if ib else c.b_port_name)
            out.append(
                ExpectedLink(
                    c.cable_id,
                    c.kind,
                    c.fabric,
                    a,
                    b,
                    c.a_port_name,
                    c.b_port_name,
                    c.a,
                    c.b,
                    c.speed_gbps,
                    "4x" if ib else "",
                )
            )
    return out
