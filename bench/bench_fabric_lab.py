"""Cabling and link counters on a running, provisioned lab (issue #19: "cabling and counters of a 4-node
lab in under 15 s"): the two fabric validators only, every node at once (one pytest process per node over
SSH, as `clusterforge certify` runs them), side by side with the cabling check alone.

    python bench/bench_fabric_lab.py [--spec inventory/clusters/lab.yaml] [--repeat 3]

The counters check reads every rail twice a window apart (counter policy `window_s`, 5 s by default), so
the window bounds its time from below; the rest is SSH, pytest start-up and the reads. Prints markdown for
bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FILES = {
    "cabling (quick)": (["test_cabling.py"], "quick"),
    "cabling + link counters (quick + full)": (["test_cabling.py", "test_link_counters.py"], "quick or full"),
}


def run_once(
    doc: dict[str, Any], inv: Path, nodes: list[str], files: list[str], marker: str
) -> tuple[float, str]:
    from clusterforge import assets
    from clusterforge.remote.ssh import reachable, ssh_setup

    ssh = ssh_setup(doc, inv, nodes)
    try:
        for n in nodes:
            reachable(ssh, n)  # the master connections up first: timed below is the checks' own cost

        def one(node: str) -> tuple[int, str]:
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    *(str(assets.validators() / f) for f in files),
                    "-m",
                    marker,
                    "--plan",
                    str(inv / "plan.json"),
                    "--hosts",
                    f"ssh://{ssh.target(node)}",
                    "--ssh-config",
                    str(ssh.config),
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--tb=line",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            return p.returncode, p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-200:]

        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            results = list(pool.map(one, nodes))
        seconds = time.monotonic() - start
    finally:
        ssh.close()
    return seconds, "; ".join(f"{n}: {r[1]}" for n, r in zip(nodes, results, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/lab.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from clusterforge.fabric import counters
    from clusterforge.flows.plan import load_plan

    plan, inv = load_plan(args.spec)
    nodes = [n["name"] for n in plan.doc["nodes"]]
    timings: dict[str, list[float]] = {k: [] for k in FILES}
    for i in range(args.repeat):  # alternated, so both see the same machine load
        for name, (files, marker) in FILES.items():
            secs, outcome = run_once(plan.doc, inv, nodes, files, marker)
            timings[name].append(secs)
            print(f"run {i + 1} {name}: {secs:.1f} s ({outcome})", file=sys.stderr)
    print(
        f"Fabric validators on {len(nodes)} lab nodes (every node at once), median of {args.repeat}; "
        f"counter window {counters.window_s():g} s:\n"
    )
    print("| checks | seconds (median) | min | max |\n|---|---|---|---|")
    for name, values in timings.items():
        print(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |")
    base, both = (statistics.median(v) for v in timings.values())
    print(f"\nratio cabling+counters / cabling alone: {both / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
