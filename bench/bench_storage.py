"""The storage checks' cost per node, on a running, provisioned lab (issue 22): side by side in one run.

    python bench/bench_storage.py [--spec inventory/clusters/lab.yaml] [--repeat 3]

  quick tier       every quick validator per node (what `clusterforge certify` runs), all nodes at once:
                   wall, controller CPU-s per node, and the storage checks' share of the checks' time
  storage, quick   validators/test_storage.py alone (quick tier), all nodes at once: wall, CPU-s per node
  storage, full    validators/test_storage.py alone (full tier: fio seq read/write, random read, checkpoint
                   write on scratch and the shared filesystem), one node alone, then all nodes at once
                   (they share one host disk and one Redis: contention is the point), with the figures fio
                   reported per target

Records and certificates are not touched (the runner's pieces, not the certify flow). Prints markdown for
bench/README.md ("Storage checks").
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_files(
    doc: dict[str, Any], inv: Path, nodes: list[str], tier: str, only: str | None, out: Path
) -> tuple[float, float, dict[str, list[Any]]]:
    """(wall s, controller CPU-s, node -> checks) of the validators (or validators/<only>) on `nodes`
    at once."""
    from clusterforge import assets
    from clusterforge.certify.results import read_results
    from clusterforge.certify.runner import PYTEST_ENV, NodeRun, pytest_argv, run_node
    from clusterforge.remote.ssh import reachable, ssh_setup

    ssh = ssh_setup(doc, inv, nodes)
    out.mkdir(parents=True, exist_ok=True)

    def one(node: str) -> list[Any]:
        ok, why = reachable(ssh, node)
        if not ok:
            raise SystemExit(f"{node}: {why}")
        run = NodeRun(node, out / f"{node}.jsonl", 900)
        argv = pytest_argv(inv / "plan.json", ssh, node, tier, run.results)
        if only:
            argv[argv.index(str(assets.validators()))] = str(assets.validators() / only)
        run_node(argv, run, env=dict(PYTEST_ENV))
        return list(read_results(run.results, node).checks)

    cpu0, t0 = _children_cpu(), time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            got = dict(zip(nodes, pool.map(one, nodes), strict=True))
    finally:
        ssh.close()
    return time.monotonic() - t0, _children_cpu() - cpu0, got


def figures(checks: list[Any]) -> dict[tuple[str, str], float]:
    """(check, target) -> the passing (or last) figure fio reported."""
    out: dict[tuple[str, str], float] = {}
    for c in checks:
        for a in c.evidence.get("attempts", []):
            target = (a.get("detail") or {}).get("target")
            if target and a.get("value") is not None:
                out[(c.check_id, target)] = float(a["value"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/lab.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-storage-"))
    from clusterforge.flows.plan import load_plan

    plan, inv = load_plan(args.spec)
    doc = plan.doc
    nodes = [n["name"] for n in doc["nodes"] if (n["desired"].get("storage") or None)]
    if not nodes:
        raise SystemExit(f"{args.spec} declares no storage")
    rows: list[tuple[str, int, list[float], list[float]]] = []
    share: list[float] = []
    quick_cases = {
        "quick tier (every quick validator)": None,
        "storage checks alone, quick": "test_storage.py",
    }
    for name, only in quick_cases.items():
        walls, cpus = [], []
        for i in range(args.repeat):
            wall, cpu, got = run_files(doc, inv, nodes, "quick", only, tmp / f"q{i}-{only or 'all'}")
            walls.append(wall)
            cpus.append(cpu / len(nodes))
            if only is None:
                total = sum(c.duration_s for cs in got.values() for c in cs)
                stor = sum(
                    c.duration_s for cs in got.values() for c in cs if c.check_id.startswith("storage.")
                )
                share.append(stor / total if total else 0.0)
            print(f"{name} run {i + 1}: {wall:.1f} s", file=sys.stderr)
        rows.append((name, len(nodes), walls, cpus))
    full_figs: dict[tuple[str, str], list[float]] = {}
    for label, subset in (
        ("storage checks alone, full, one node", nodes[:1]),
        ("…, all nodes at once", nodes),
    ):
        wall, cpu, got = run_files(doc, inv, subset, "full", "test_storage.py", tmp / f"full-{len(subset)}")
        rows.append((label, len(subset), [wall], [cpu / len(subset)]))
        for checks in got.values():
            for k, v in figures(checks).items():
                full_figs.setdefault((f"{len(subset)} node(s)", *k), []).append(v)
        bad = {n: [c.check_id for c in cs if c.status != "pass"] for n, cs in got.items()}
        print(f"{label}: {wall:.1f} s, not passing: {bad}", file=sys.stderr)

    print(
        f"Storage checks, {len(nodes)} lab nodes, {os.cpu_count()} CPUs "
        f"(median of {args.repeat} quick runs):\n"
    )
    print("| measure | nodes | wall s | controller CPU-s per node |\n|---|---|---|---|")
    for name, n, walls, cpus in rows:
        print(f"| {name} | {n} | {statistics.median(walls):.1f} | {statistics.median(cpus):.2f} |")
    print(f"\nStorage checks' share of the quick tier's check time: {100 * statistics.median(share):.1f} %\n")
    print("| full tier run | check | target | figure (median over nodes) |\n|---|---|---|---|")
    for (run, check, target), vals in sorted(full_figs.items()):
        unit = "IOPS" if "randread" in check else "GB/s"
        print(f"| {run} | `{check}` | {target} | {statistics.median(vals):.3g} {unit} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
