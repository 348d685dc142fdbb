#!/usr/bin/env python3
"""Lab bring-up benchmark (root): time to N nodes SSH-reachable from a cached image, PSS per node, teardown.

    sudo .venv/bin/python bench/bench_lab.py [--sizes 4 32] [--settle 15] [--json]

Uses a synthetic plan (half RoCE, half InfiniBand SKUs, 8 rails each) in cluster `bench`; refuses to run
while any lab is on the host. Prints figures, asserts nothing. Results go in bench/README.md ("Lab").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from clusterforge.lab import Lab, cleanup, image, node, procs
from clusterforge.lab.synthetic import make_plan


def _pss_mib(lab: Lab) -> dict[str, list[float]]:
    """Per node: guest processes (its netns) and host-side overhead (supervisor + nspawn)."""
    guest, host = [], []
    for n in lab.plan.nodes:
        guest.append(procs.pss_kib(node.node_pids(n)) / 1024)
        sup = node.supervisor_pid(lab.paths(n.name))
        nspawn = node.read_state(lab.paths(n.name)).get("nspawn")
        host.append(procs.pss_kib([p for p in (sup, nspawn) if p]) / 1024)
    return {"guest": guest, "host_side": host}


def run(size: int, settle: float) -> dict[str, Any]:
    half = size // 2
    lab = Lab(make_plan({"roce": size - half, "ib": half}, cluster="bench"))
    t0 = time.monotonic()
    lab.infra_up()
    t_infra = time.monotonic() - t0
    t1 = time.monotonic()
    for n in lab.plan.nodes:
        lab.node_up(n.name)
    t_spawned = time.monotonic() - t1
    lab.wait_ssh(timeout=600)
    t_ssh = time.monotonic() - t1
    time.sleep(settle)
    pss = _pss_mib(lab)
    nprocs = statistics.mean(len(node.node_pids(n)) for n in lab.plan.nodes)
    t2 = time.monotonic()
    lab.down()
    t_down = time.monotonic() - t2
    left = {k: v for k, v in cleanup.leftovers().items() if v}
    total = [g + h for g, h in zip(pss["guest"], pss["host_side"], strict=True)]
    return {
        "nodes": size,
        "infra_up_s": round(t_infra, 2),
        "nodes_started_s": round(t_spawned, 2),
        "nodes_ssh_s": round(t_ssh, 2),
        "total_up_s": round(t_infra + t_ssh, 2),
        "pss_guest_mib_mean": round(statistics.mean(pss["guest"]), 1),
        "pss_guest_mib_max": round(max(pss["guest"]), 1),
        "pss_with_supervisor_mib_mean": round(statistics.mean(total), 1),
        "processes_per_node": round(nprocs, 1),
        "down_s": round(t_down, 2),
        "leftovers": left,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 32])
    ap.add_argument("--settle", type=float, default=15.0, help="seconds after SSH before measuring PSS")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_lab needs root", file=sys.stderr)
        return 2
    busy = {k: v for k, v in cleanup.leftovers().items() if v}
    if busy:
        print(f"a lab is running (`clusterforge lab down` first): {busy}", file=sys.stderr)
        return 2
    t = time.monotonic()
    lower = image.ensure_image()
    prep = {"image": str(lower), "image_prepare_s": round(time.monotonic() - t, 2), "cpus": os.cpu_count()}
    results = [run(n, args.settle) for n in args.sizes]
    if args.json:
        print(json.dumps({"prepare": prep, "runs": results}, indent=1))
        return 0
    print(f"image ready in {prep['image_prepare_s']} s ({lower}); host CPUs {prep['cpus']}")
    hdr = (
        "nodes",
        "infra_up_s",
        "nodes_ssh_s",
        "total_up_s",
        "pss_guest_mib_mean",
        "pss_guest_mib_max",
        "pss_with_supervisor_mib_mean",
        "processes_per_node",
        "down_s",
    )
    print("  ".join(hdr))
    for r in results:
        print("  ".join(str(r[h]).rjust(len(h)) for h in hdr))
        if r["leftovers"]:
            print(f"  leftovers after down: {r['leftovers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
