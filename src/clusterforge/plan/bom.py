"""Bill of materials from the cabling sheet: nodes, switches per model, cables and fibres by part and length,
transceivers per end, each with spares (`site.cabling.spares`).

The counts are those of cables.csv, so the two always reconcile:

* a cable or fibre line counts the distinct `assembly_id`s with that part (a splitter or an 800G cable
  carries several legs under one assembly; a 1:2 splitter fibre two legs);
* a transceiver line counts the distinct ends holding that optic: a switch cage `(device, cage)` (a
  twin-port transceiver serves both legs of its cage) or a NIC port `(device, port name)`.
"""

from __future__ import annotations

from collections import Counter
from math import ceil
from typing import NamedTuple

from clusterforge.plan.build import Plan
from clusterforge.plan.cabling import Cable, CableSheet
from clusterforge.spec.model import Spares
from clusterforge.spec.netcatalog import switch_models

BOM_FIELDS = ("category", "item", "quantity", "part_number", "length_m", "spares", "order_quantity")


class BomLine(NamedTuple):
    category: str  # node, switch, cable, transceiver
    item: str
    quantity: int
    part_number: str
    length_m: str
    spares: int
    order_quantity: int


def optic_ends(c: Cable) -> list[tuple[str, tuple[str, str]]]:
    """(optic part, the end it sits in) for each end of `c` that holds a transceiver."""
    out = []
    if c.a_optic:
        out.append((c.a_optic, (c.a_device, c.a_port_name if c.a_cage is None else f"cage{c.a_cage}")))
    if c.b_optic:
        out.append((c.b_optic, (c.b_device, c.b_port_name if c.b_cage is None else f"cage{c.b_cage}")))
    return out


def _spare(q: int, percent: float, minimum: int) -> int:
    return max(ceil(q * percent / 100 - 1e-9), minimum) if q else 0


def bom_lines(plan: Plan, sheet: CableSheet) -> list[BomLine]:
    sp: Spares = plan.spec.cluster.site.cabling.spares
    models = switch_models()
    out: list[BomLine] = []
    for sku, q in sorted(Counter(n["sku"] for n in plan.doc["nodes"]).items()):
        out.append(BomLine("node", sku, q, "", "", 0, q))
    for model, q in sorted(Counter(s.model for s in sheet.switches).items()):
        m = models.get(model)
        roles = sorted({f"{s.network} {s.role}" for s in sheet.switches if s.model == model})
        spare = _spare(q, sp.switches_percent, 0)
        item = f"{model} switch ({', '.join(roles)})"
        out.append(BomLine("switch", item, q, (m.part_number or "") if m else "", "", spare, q + spare))
    assemblies: dict[tuple[str, str, float], set[str]] = {}
    optics: dict[str, set[tuple[str, str]]] = {}
    for c in sheet.cables:
        assemblies.setdefault((c.cable_part, c.cable_type, c.length_m), set()).add(c.assembly_id)
        for part, end in optic_ends(c):
            optics.setdefault(part, set()).add(end)
    for (part, kind, metres), ids in sorted(
        assemblies.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])
    ):
        q = len(ids)
        spare = _spare(q, sp.percent, sp.minimum)
        out.append(BomLine("cable", f"{kind}, {metres:g} m", q, part, f"{metres:g}", spare, q + spare))
    for part, ends in sorted(optics.items()):
        q = len(ends)
        spare = _spare(q, sp.percent, sp.minimum)
        out.append(BomLine("transceiver", f"transceiver {part}", q, part, "", spare, q + spare))
    return out
