"""Issue #20's figures in one run, on one running, provisioned lab: for each size (4, 16, 32 nodes of the
lab, half RoCE and half InfiniBand, chosen with --limit), side by side and end to end through the CLI as an
operator runs it (`clusterforge …` in a child process: start-up, plan load, reads, records, report):

  drift (fast), the default (`--via auto`: one Slurm job step)   drift (fast) `--via ssh`
  certify quick, the default (`--via auto`: one Slurm job step)  certify quick `--via ssh`
  no-op provision, the default (a read as one Slurm job step, converged nodes left alone)
  drift `--deep` (site.yml --check --diff on every node: the longest, last)

Wall seconds and the controller's CPU seconds (the child `clusterforge` and everything it waited for:
ansible-playbook and its forks, pytest, ssh, srun; the nodes' own work in the nodes is not the
controller's — here the nodes share this machine's cores, so wall times are the same hardware doing the
same checks). Every row goes to --out as a JSON line as soon as it is measured, and to stdout as markdown.

    CLUSTERFORGE_DB=… python bench/bench_fleet.py --spec SPEC [--sizes 4 16 32] [--out rows.jsonl]

Run it on converged nodes (right after their provision, with that provision's records: CLUSTERFORGE_DB):
every row must find nothing and change nothing.
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "clusterforge.cli"]


def subset(nodes: Sequence[dict[str, Any]], size: int) -> list[str]:
    """`size` node names of the plan, as many of each fabric type as there are (the rest of the larger
    group when one runs out), plan order kept."""
    by_type: dict[str, list[str]] = {}
    for n in nodes:
        by_type.setdefault(str(n.get("fabric_type", "")), []).append(n["name"])
    if size > len(nodes):
        raise ValueError(f"{size} nodes asked, the plan has {len(nodes)}")
    groups = sorted(by_type.values(), key=len)
    picked: set[str] = set()
    left = size
    for i, names in enumerate(groups):
        share = min(len(names), -(-left // (len(groups) - i)))  # an even share of what is left, rounded up
        picked.update(names[:share])
        left -= share
    return [n["name"] for n in nodes if n["name"] in picked]


def _children_cpu_s() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def run_cli(args: list[str], out: Path | None, timeout: float) -> tuple[float, float, int, dict[str, Any]]:
    """(wall s, controller CPU-s, exit code, the JSON report when `out` is given) of one CLI run."""
    c0, t0 = _children_cpu_s(), time.monotonic()
    proc = subprocess.run(
        [*CLI, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    wall, cpu = time.monotonic() - t0, _children_cpu_s() - c0
    doc: dict[str, Any] = {}
    if out is not None and out.is_file():
        doc = json.loads(out.read_text())
    elif proc.returncode not in (0, 3):
        doc = {"stderr": proc.stderr[-2000:], "stdout": proc.stdout[-2000:]}
    return wall, cpu, proc.returncode, doc


def drift_result(rc: int, doc: dict[str, Any]) -> str:
    items, errors = doc.get("items", []), doc.get("errors", [])
    deep = doc.get("deep", {})
    return f"rc {rc}; {len(items)} items, {len(errors)} errors; check run on {len(deep)}"


def certify_result(rc: int, doc: dict[str, Any]) -> str:
    verdicts: dict[str, int] = {}
    for n in doc.get("nodes", []):
        verdicts[n["verdict"]] = verdicts.get(n["verdict"], 0) + 1
    return f"rc {rc}; " + ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items()))


def provision_result(rc: int) -> str:
    """The outcome of the last provision run on record (this process's CLUSTERFORGE_DB)."""
    from clusterforge.records import Store

    with Store() as store:
        run = store.runs(kind="provision", limit=1)[0]
        outcomes = store.node_outcomes(run.id)
    left = sum(1 for o in outcomes if o.outcome == "skipped" and (o.message or "").startswith("converged"))
    changed = sum(int(o.changed or 0) for o in outcomes)
    return f"rc {rc}; {changed} changed tasks; {left} of {len(outcomes)} left alone"


def cases(spec: Path, limit: str, work: Path) -> list[tuple[str, list[str], Path | None]]:
    s = str(spec)
    d, c = work / "drift.json", work / "certify.json"
    return [
        ("drift (fast), default: one Slurm job step", ["drift", s, "--limit", limit, "--format", "json",
                                                       "--output", str(d)], d),
        ("drift (fast), --via ssh", ["drift", s, "--limit", limit, "--via", "ssh", "--format", "json",
                                     "--output", str(d)], d),
        ("certify quick, default: one Slurm job step", ["certify", s, "--limit", limit, "--format", "json",
                                                        "--output", str(c)], c),
        ("certify quick, --via ssh", ["certify", s, "--limit", limit, "--via", "ssh", "--format", "json",
                                      "--output", str(c)], c),
        ("no-op provision, default (read as one job step)", ["provision", s, "--limit", limit], None),
        ("drift --deep (site.yml --check --diff)", ["drift", s, "--limit", limit, "--deep", "--format",
                                                    "json", "--output", str(d)], d),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, required=True)
    ap.add_argument("--sizes", nargs="+", type=int, default=[4, 16, 32])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench-fleet.jsonl")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args(argv)

    from clusterforge.flows.plan import load_plan

    plan, _ = load_plan(args.spec)
    nodes: list[dict[str, Any]] = plan.doc["nodes"]
    print("| nodes | what (end to end, `clusterforge …`) | wall s | controller CPU-s | per node | result |")
    print("|---|---|---|---|---|---|", flush=True)
    for size in args.sizes:
        names = subset(nodes, size)
        work = Path(tempfile.mkdtemp(prefix=f"bench-fleet-{size}-"))
        for what, cli_args, out in cases(args.spec, ",".join(names), work):
            if out is not None:
                out.unlink(missing_ok=True)
            wall, cpu, rc, doc = run_cli(cli_args, out, args.timeout)
            if cli_args[0] == "drift":
                result = drift_result(rc, doc)
            elif cli_args[0] == "certify":
                result = certify_result(rc, doc)
            else:
                result = provision_result(rc)
            row = {
                "nodes": size,
                "what": what,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "cpu_s_per_node": round(cpu / size, 3),
                "result": result,
                "load": os.getloadavg()[0],
            }
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"| {size} | {what} | {wall:.2f} | {cpu:.2f} | {cpu / size:.2f} | {result} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
