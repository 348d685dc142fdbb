"""Short summaries of a plan: machine-readable (`--json`) and a rich table for people."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.plan.build import Plan
from clusterforge.term import safe


def summary(plan: Plan) -> dict[str, Any]:
    """Totals over the compute fabrics (equal to the fabric's own figures when there is one)."""
    gpus_of = {name: sku["gpu"]["count"] for name, sku in plan.doc["skus"].items()}
    fabric_gpus: Counter[str] = Counter()
    for n in plan.doc["nodes"]:
        fabric_gpus[n["fabric"]] += gpus_of[n["sku"]]
    fabrics: list[dict[str, Any]] = []
    for f in plan.fabrics.values():
        fabrics.append(
            {
                "name": f.name,
                "type": f.kind,
                "nodes": f.nodes,
                "gpus": fabric_gpus[f.name],
                "tiers": f.tiers,
                "scalable_units": f.scalable_units,
                "switches": {"leaf": f.leaves, "spine": f.spines, "core": f.cores},
                "bisection_gbps": f.bisection_gbps,
                "cables": len(f.links),
                "max_switch_hops": f.max_switch_hops,
            }
        )
    return {
        "cluster": plan.name,
        "plan_hash": plan.plan_hash,
        "nodes": len(plan.doc["nodes"]),
        "gpus": sum(fabric_gpus.values()),
        "tiers": max((f["tiers"] for f in fabrics), default=0),
        "switches": {r: sum(f["switches"][r] for f in fabrics) for r in ("leaf", "spine", "core")},
        "bisection_gbps": sum(f["bisection_gbps"] for f in fabrics),
        "cables": sum(f["cables"] for f in fabrics),
        "fabrics": fabrics,
    }


def print_summary(plan: Plan, out_dir: str, console: Console) -> None:
    s = summary(plan)
    console.print(
        f"[bold]{safe(s['cluster'])}[/]: {s['nodes']} nodes, {s['gpus']} GPUs, plan {s['plan_hash'][:12]}"
    )
    t = Table("fabric", "type", "nodes", "SUs", "tiers", "leaf", "spine", "core", "cables", "bisection Tb/s")
    for f in s["fabrics"]:
        t.add_row(
            safe(f["name"]),
            safe(f["type"]),
            str(f["nodes"]),
            str(f["scalable_units"]),
            str(f["tiers"]),
            str(f["switches"]["leaf"]),
            str(f["switches"]["spine"]),
            str(f["switches"]["core"]),
            str(f["cables"]),
            f"{f['bisection_gbps'] / 1000:g}",
        )
    console.print(t)
    console.print(
        f"wrote {safe(out_dir)}/ (hosts.yml, group_vars/, plan.json, cables.csv, bom.csv, topology.svg)"
    )
