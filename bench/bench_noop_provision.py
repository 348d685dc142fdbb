"""A no-op provision three ways on a running, provisioned lab (issue #20 item 2), side by side in one run:
site.yml on every node (`clusterforge provision --full`, what every no-op cost before), and the default —
a read first (the fast drift's reads and the quick validators, no check run) that leaves converged nodes
alone — with that read over SSH and as one Slurm job step (`--via slurm`). Wall time and the controller's
CPU seconds (this process and its waited-for children: ansible-playbook, pytest, ssh, srun).

    python bench/bench_noop_provision.py [--spec inventory/clusters/lab.yaml] [--repeat 3]

Run it on converged nodes (right after a provision); every row must change nothing. Prints markdown for
bench/README.md.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_slurm_step import REPO, measure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=REPO / "inventory/clusters/lab.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from rich.console import Console

    from clusterforge import targets
    from clusterforge.flows.converged import converged
    from clusterforge.flows.plan import load_plan
    from clusterforge.run.provision import Options, ProvisionReport, provision_recorded

    plan, inv = load_plan(args.spec, Path(tempfile.mkdtemp(prefix="bench-noop-")))
    doc: dict[str, Any] = plan.doc
    nodes = [n["name"] for n in doc["nodes"]]
    target = targets.for_plan(doc)
    env, slurm = target.environment(doc), target.pool_manager(doc)
    quiet = Console(file=io.StringIO(), width=200)

    def run(scheduler: Any | None, read: bool) -> ProvisionReport:
        found = converged(doc, inv, None, env, None, scheduler).nodes if read else {}
        opts = Options(converged=found)
        return provision_recorded(doc, inv, opts, target.pool_manager(doc), quiet, args.spec, env)

    def say(rep: ProvisionReport) -> str:
        hosts = rep.hosts.values()
        left = sum(1 for h in hosts if h.status == "skipped" and h.message.startswith("converged"))
        changed = sum(h.changed for h in hosts)
        verdict = "ok" if rep.ok else "FAILED"
        return f"{verdict}; {changed} changed tasks; {left} of {len(rep.hosts)} left alone"

    cases: list[tuple[str, Callable[[], ProvisionReport]]] = [
        ("site.yml on every node (--full)", lambda: run(None, read=False)),
        ("read over SSH, converged nodes left alone", lambda: run(None, read=True)),
        ("read as one Slurm job step (--via slurm)", lambda: run(slurm, read=True)),
    ]
    print(f"| no-op provision, {len(nodes)} lab nodes, median of {args.repeat} | wall s | controller CPU-s "
          "| per node | result |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, fn in cases:
        wall, cpu, last = measure(fn, args.repeat)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / len(nodes):.2f} | {say(last)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
