"""Time `clusterforge fabric check` of the 4,096-GPU example plan against a synthetic recorded discovery
(an ibnetdiscover topology file rendered from the plan's wiring, with rail swaps, a leaf-port swap, a
missing cable and a degraded link injected). Prints the timings and the findings (no assertions).

    PYTHONPATH=src .venv/bin/python bench/bench_fabric_check.py [--spec inventory/clusters/b200-ib-16su.yaml]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.render import Wire, ibnetdiscover_text
from clusterforge.plan import build_plan
from clusterforge.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/b200-ib-16su.yaml")
    args = ap.parse_args()
    plan = build_plan(load_spec(args.spec))
    wires = [Wire(e.a, e.b, e.kind == "node-leaf") for e in expected_links(plan)]
    for i, j in ((0, 1), (8 * 100 + 2, 8 * 100 + 5), (8 * 300, 8 * 301)):  # two rail swaps, one leaf swap
        a, b = wires[i], wires[j]
        wires[i], wires[j] = a._replace(b=b.b), b._replace(b=a.b)
    wires[8 * 200 + 7] = wires[8 * 200 + 7]._replace(speed="HDR")
    del wires[8 * 400 + 3]
    with tempfile.TemporaryDirectory() as tmp:
        disc = Path(tmp) / "ibnetdiscover.txt"
        disc.write_text(ibnetdiscover_text(wires))
        size = disc.stat().st_size
        from typer.testing import CliRunner

        from clusterforge.cli import app

        t0 = time.perf_counter()
        res = CliRunner().invoke(app, ["fabric", "check", str(args.spec), "--discovery", str(disc)])
        wall = time.perf_counter() - t0
    print(f"spec {args.spec.name}: {len(plan.nodes)} nodes, {len(wires)} observed links, {size / 1e6:.1f} MB")
    print(f"fabric check (load, plan, cabling, parse, compare, render): {wall:.2f} s, exit {res.exit_code}")
    print(res.output)


if __name__ == "__main__":
    main()
