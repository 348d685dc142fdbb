"""Certification and drift over SSH against the same as one Slurm job step, on a running, provisioned lab
(issue #20 item 3), side by side in one run: wall time and the controller's CPU seconds (this process and
its waited-for children: pytest, ssh, srun; the nodes' own work is not the controller's).

    python bench/bench_slurm_step.py [--spec inventory/clusters/lab.yaml] [--repeat 3]

The lab's nodes share this machine's cores with the controller, so wall times compare the two paths on
the same hardware but do not show what dedicated nodes would; the controller CPU column is the figure that
scales with the node count. Prints markdown for bench/README.md.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall seconds, median controller CPU seconds, the last result."""
    walls, cpus, last = [], [], None
    for _ in range(repeat):
        c0, t0 = _cpu_s(), time.monotonic()
        last = fn()
        walls.append(time.monotonic() - t0)
        cpus.append(_cpu_s() - c0)
    return statistics.median(walls), statistics.median(cpus), last


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/lab.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from clusterforge import targets
    from clusterforge.certify import runner, slurm_step
    from clusterforge.flows.drift import drift
    from clusterforge.flows.plan import load_plan

    plan, inv = load_plan(args.spec, Path(tempfile.mkdtemp(prefix="bench-step-")))
    doc: dict[str, Any] = plan.doc
    nodes = [n["name"] for n in doc["nodes"]]
    target = targets.for_plan(doc)
    env, slurm = target.environment(doc), target.pool_manager(doc)
    work = Path(tempfile.mkdtemp(prefix="bench-step-work-"))

    def verdicts(res: dict[str, Any]) -> str:
        return ",".join(sorted({r.verdict for r in res.values()}))

    cases: list[tuple[str, Callable[[], Any], Callable[[Any], str]]] = [
        (
            "certify quick: over SSH",
            lambda: runner.certify_nodes(doc, inv, nodes, "quick", env=env),
            verdicts,
        ),
        (
            "certify quick: one Slurm job step",
            lambda: slurm_step.certify_step(doc, inv, nodes, "quick", work, 900, env=env),
            verdicts,
        ),
        ("drift (fast): over SSH", lambda: drift(doc, inv, env=env), lambda r: f"{len(r.items)} items"),
        (
            "drift (fast): one Slurm job step",
            lambda: drift(doc, inv, env=env, scheduler=slurm),
            lambda r: f"{len(r.items)} items, {len(r.errors)} errors",
        ),
    ]
    head = f"{len(nodes)} lab nodes, median of {args.repeat}"
    print(f"| {head} | wall s | controller CPU-s | per node | result |")
    print("|---|---|---|---|---|")
    for name, fn, say in cases:
        wall, cpu, last = measure(fn, args.repeat)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / len(nodes):.2f} | {say(last)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
