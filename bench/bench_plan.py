"""Time `clusterforge plan` end to end for ~1k, ~10k and ~100k GPUs; print a table (no assertions).

Every case runs in fresh child processes, so the peak RSS (`ru_maxrss`) is that case's own:

* stages: one process per repeat times import, load (YAML + schema + cross-field checks), plan (addresses,
  fabric engine, digests, plan hash) and write (plan.json, hosts.yml, group_vars, cables, BOM, topology
  .dot and SU-level .svg); the best repeat is reported;
* cli: the real command line, `clusterforge plan SPEC --out TMP --json`: wall time, CPU time (user + system,
  Graphviz included) and peak RSS of that process.

On a shared machine wall times follow the load; the CPU times show what the work itself costs.

    .venv/bin/python bench/bench_plan.py                 # all cases, 3 repeats
    .venv/bin/python bench/bench_plan.py --case 100k --repeat 1 --json /tmp/plan-bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {  # label: spec (GPUs = nodes x 8)
    "1k": ROOT / "inventory" / "clusters" / "h100-ib-4su.yaml",  # 128 nodes, 1,024 GPUs, 2 tiers
    "10k": ROOT / "bench" / "specs" / "h100-10k.yaml",  # 1,250 nodes, 10,000 GPUs, 3 tiers of radix 64
    "100k": ROOT / "bench" / "specs" / "h100-100k.yaml",  # 12,500 nodes, 100,000 GPUs, 3 tiers of radix 144
}
TARGET_S, TARGET_RSS_MIB = 10.0, 2048.0  # the 100k case, end to end


def _child(spec: str) -> None:
    """Run the stages once in this (fresh) process and print one JSON line."""
    t0 = time.perf_counter()
    from clusterforge.plan import build_plan
    from clusterforge.plan.outputs import write_outputs
    from clusterforge.plan.summary import summary
    from clusterforge.spec import load_spec

    t1 = time.perf_counter()
    s = load_spec(spec)
    t2 = time.perf_counter()
    plan = build_plan(s)
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        dest = write_outputs(plan, Path(out), svg=True)
        t4 = time.perf_counter()
        sizes = {p.name: p.stat().st_size for p in dest.iterdir() if p.is_file()}
    sm = summary(plan)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                "import_s": t1 - t0,
                "load_s": t2 - t1,
                "plan_s": t3 - t2,
                "write_s": t4 - t3,
                "total_s": t4 - t0,
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "nodes": sm["nodes"],
                "gpus": sm["gpus"],
                "tiers": sm["tiers"],
                "switches": sm["switches"],
                "cables": sm["cables"],
                "bytes": sizes,
            }
        )
    )


def _stages(spec: Path, repeat: int) -> dict[str, object]:
    runs = []
    for _ in range(repeat):
        r = subprocess.run(
            [sys.executable, __file__, "--child", str(spec)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda x: x["total_s"])
    best["peak_rss_mib"] = max(x["peak_rss_mib"] for x in runs)
    return best


def _cli(spec: Path) -> dict[str, float]:
    """`clusterforge plan` as a user runs it; peak RSS of the child via RUSAGE_CHILDREN (max over children so
    far, so cases run from small to large)."""
    exe = Path(sys.executable).parent / "clusterforge"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from clusterforge.cli import main; main()"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        subprocess.run(
            [*cmd, "plan", str(spec), "--out", out, "--json"], check=True, capture_output=True, cwd=ROOT
        )
        wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"cli_s": wall, "cli_cpu_s": cpu, "cli_peak_rss_mib": after.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="case(s) to run (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="stage runs per case; the best is reported")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return
    labels = [c for c in CASES if c in (args.case or CASES)]
    results = {}
    head = (
        f"{'case':<5} {'nodes':>6} {'GPUs':>7} {'tiers':>5} {'switches':>8} {'cables':>7} {'import':>7} "
        f"{'load':>6} {'plan':>6} {'write':>6} {'total s':>7} {'CPU s':>6} {'RSS MiB':>7} {'CLI s':>6} "
        f"{'CLI CPU':>7} {'CLI MiB':>7}"
    )
    print(head)
    for label in labels:
        r = {**_stages(CASES[label], args.repeat), **_cli(CASES[label])}
        results[label] = {"spec": str(CASES[label].relative_to(ROOT)), **r}
        print(
            f"{label:<5} {r['nodes']:>6} {r['gpus']:>7} {r['tiers']:>5} {sum(r['switches'].values()):>8} "
            f"{r['cables']:>7} {r['import_s']:>7.2f} {r['load_s']:>6.2f} {r['plan_s']:>6.2f} "
            f"{r['write_s']:>6.2f} "
            f"{r['total_s']:>7.2f} {r['cpu_s']:>6.2f} {r['peak_rss_mib']:>7.0f} {r['cli_s']:>6.2f} "
            f"{r['cli_cpu_s']:>7.2f} {r['cli_peak_rss_mib']:>7.0f}"
        )
    if "100k" in results:
        r = results["100k"]
        ok = r["cli_s"] < TARGET_S and r["cli_peak_rss_mib"] < TARGET_RSS_MIB
        print(
            f"100k target (< {TARGET_S:g} s, < {TARGET_RSS_MIB:g} MiB end to end): "
            f"{'met' if ok else 'MISSED'}"
        )
    meta = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "repeat": args.repeat,
        "loadavg": os.getloadavg(),
    }
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "cases": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
