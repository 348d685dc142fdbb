"""Certification timing on a running, provisioned lab: quick tier end to end, per node and per check.

    python bench/bench_certify.py [--spec inventory/clusters/lab.yaml] [--repeat 3]

Modes compared (same nodes, same checks):
  per-node   one pytest process per node, all nodes at once (what `clusterforge certify` does)
  serial     one pytest process per node, one node at a time (--jobs 1)
  one-proc   a single pytest process over every node (testinfra --hosts a,b,c,d)
End to end = `certify_flow` (plan, records, validators, certificates, report) with a private records DB.
Prints markdown for bench/README.md ("Certification").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

REPO = Path(__file__).resolve().parents[1]


def end_to_end(spec: Path, out: Path) -> tuple[float, int, dict[str, Any]]:
    import json

    from clusterforge.flows.certify import Outputs, certify_flow

    start = time.monotonic()
    with open(os.devnull, "w") as sink:
        rc = certify_flow(spec, "quick", None, False, Console(file=sink), Outputs(json=out))
    return time.monotonic() - start, rc, json.loads(out.read_text())


def runner_only(doc: dict[str, Any], inv: Path, nodes: list[str], jobs: int | None) -> float:
    from clusterforge.certify.runner import certify_nodes

    start = time.monotonic()
    certify_nodes(doc, inv, nodes, "quick", jobs=jobs)
    return time.monotonic() - start


def one_process(doc: dict[str, Any], inv: Path, nodes: list[str]) -> float:
    from clusterforge import assets
    from clusterforge.remote.ssh import reachable, ssh_setup

    ssh = ssh_setup(doc, inv, nodes)
    start = time.monotonic()
    try:
        for n in nodes:
            reachable(ssh, n)
        hosts = ",".join(f"ssh://{ssh.target(n)}" for n in nodes)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(assets.validators()),
                "-m",
                "quick",
                "--plan",
                str(inv / "plan.json"),
                "--hosts",
                hosts,
                "--ssh-config",
                str(ssh.config),
                "-q",
                "-p",
                "no:cacheprovider",
                "--tb=no",
            ],
            capture_output=True,
            check=False,
        )
        return time.monotonic() - start
    finally:
        ssh.close()


def phases(path: Path) -> tuple[float, float, float]:
    """(session start, first check start, session end) from a node's JSON-lines results."""
    import json

    recs = [json.loads(line) for line in path.read_text().splitlines()]
    checks = [r for r in recs if r["kind"] == "check"]
    return recs[0]["time"], checks[0]["started"], recs[-1]["time"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/lab.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-certify-"))
    os.environ.setdefault("CLUSTERFORGE_DB", str(tmp / "records.db"))
    os.environ.setdefault("CLUSTERFORGE_CERT_DIR", str(tmp / "certs"))
    from clusterforge.flows.plan import load_plan

    plan, inv = load_plan(args.spec)
    nodes = [n["name"] for n in plan.doc["nodes"]]
    e2e, docs = [], []
    for i in range(args.repeat):
        secs, rc, doc = end_to_end(args.spec, tmp / f"run{i}.json")
        e2e.append(secs)
        docs.append(doc)
        print(f"end-to-end run {i + 1}: {secs:.1f} s, exit {rc}, summary {doc['summary']}", file=sys.stderr)
    modes = {
        "per-node (all at once)": lambda: runner_only(plan.doc, inv, nodes, None),
        "per-node, --jobs 1": lambda: runner_only(plan.doc, inv, nodes, 1),
        "one pytest process": lambda: one_process(plan.doc, inv, nodes),
    }
    timings = {name: [fn() for _ in range(args.repeat)] for name, fn in modes.items()}

    print(f"Quick tier, {len(nodes)} lab nodes, {os.cpu_count()} CPUs, median of {args.repeat}:\n")
    print("| measure | seconds |\n|---|---|")
    print(f"| end to end (plan, records, validators, certificates) | {statistics.median(e2e):.1f} |")
    for name, values in timings.items():
        print(f"| validators only, {name} | {statistics.median(values):.1f} |")
    last = docs[-1]
    runs = Path(os.environ["CLUSTERFORGE_DB"]).parent / "certify" / last["run_id"]
    print(
        "\n| node | verdict | checks | seconds | ssh + pytest start + collection | prefetch batch | checks |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in last["nodes"]:
        start, first, end = phases(runs / f"{n['node']}.jsonl")
        rest = n["seconds"] - (end - start)
        print(
            f"| {n['node']} | {n['verdict']} | {len(n['checks'])} | {n['seconds']:.1f} | {rest:.1f} | "
            f"{first - start:.1f} | {end - first:.1f} |"
        )
    per_check: dict[str, list[float]] = {}
    for n in last["nodes"]:
        for c in n["checks"]:
            per_check.setdefault(c["check_id"].split("[")[0], []).append(float(c["duration_s"]))
    print("\n| slowest checks (all rails/nodes) | runs | mean ms | max ms |\n|---|---|---|---|")
    for cid, vals in sorted(per_check.items(), key=lambda kv: -max(kv[1]))[:10]:
        print(f"| `{cid}` | {len(vals)} | {1000 * statistics.mean(vals):.0f} | {1000 * max(vals):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
