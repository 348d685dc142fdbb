"""The nodes' own checks through the pool's engine (`--via auto|slurm|kubernetes`), for the flows that read
nodes (certify, drift, provision's read): which engine, which nodes it can start work on, and the run.

`auto` (the default): the spec's pool manager's engine when it has one (Slurm, Kubernetes), else SSH; nodes
the engine cannot start work on (not in the pool yet, down, or the engine does not answer) go over SSH."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.certify.k8s_jobs import run_jobs
from clusterforge.certify.node_job import StepAnswer
from clusterforge.certify.runner import DEADLINE_S, TIER_MARKERS
from clusterforge.certify.slurm_step import run_step
from clusterforge.errors import ClusterforgeError
from clusterforge.term import safe

VIA = ("auto", "ssh", "slurm", "kubernetes")
ENGINES = ("slurm", "kubernetes")  # the pool managers that can run work on their nodes


def bad_via(via: str) -> str:
    """Why `via` is not an engine (an input error, found before anything is read or written), or ""."""
    return "" if via in VIA else f"--via must be one of {', '.join(VIA)}; got {via!r}"


def engine(target: Any, doc: dict[str, Any], via: str, spec: Any, verb: str) -> tuple[Any | None, str]:
    """The pool manager whose engine `via` names (None for ssh, and for auto when the spec's pool manager
    runs no work: a file registry), or why it cannot be used (an input error: not an engine, or another
    engine than the spec's pool manager)."""
    if wrong := bad_via(via):
        return None, wrong
    if via == "ssh":
        return None, ""
    if via == "auto":
        try:
            scheduler = target.pool_manager(doc)
        except ClusterforgeError:  # e.g. the kubernetes extra is not installed: the nodes are read over SSH
            return None, ""
        return (scheduler if getattr(scheduler, "name", "") in ENGINES else None), ""
    scheduler = target.pool_manager(doc)
    if scheduler is None or getattr(scheduler, "name", "") != via:
        return None, (
            f"--via {via} needs the {via} pool manager; {spec}'s is "
            f"{getattr(scheduler, 'name', 'none')} (pools.*.manager): {verb} over SSH (--via ssh)"
        )
    return scheduler, ""


def split_by_scheduler(
    scheduler: Any, names: list[str], console: Console | None
) -> tuple[list[str], list[str]]:
    """(the nodes the pool's engine can start work on, the others: unknown to it or down, or every node
    when it does not answer), in `names`' order; said on `console`."""
    try:
        states = scheduler.status(names)
    except ClusterforgeError as exc:  # slurmctld / the API server does not answer: still checked, over SSH
        if console is not None:
            console.print(f"[yellow]{scheduler.name}[/]: {safe(exc)}: every node over SSH", highlight=False)
        states = {}
    runnable = [n for n in names if n in states and states[n].state not in ("unknown", "down")]
    by_ssh = [n for n in names if n not in runnable]
    if console is not None:
        engine = "a Slurm job step" if scheduler.name == "slurm" else "Kubernetes Jobs"
        console.print(
            f"[bold]»[/] {len(runnable)} node(s) through {engine}, {len(by_ssh)} over SSH"
            + (f" ({safe(', '.join(by_ssh))})" if by_ssh else "")
        )
    return runnable, by_ssh


def node_side(
    scheduler: Any,
    doc: dict[str, Any],
    inventory: Path,
    nodes: list[str],
    workdir: Path,
    *,
    states: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    progress: Any = None,
    cancel: threading.Event | None = None,
    run_id: str = "",
) -> StepAnswer:
    """The quick tier (and the applied-state reads `states` asks for) run by `nodes` on themselves through
    the pool's own engine: one Slurm job step, or one Kubernetes Job per node."""
    marker, deadline = TIER_MARKERS["quick"], DEADLINE_S["quick"]
    if scheduler.name == "kubernetes":
        return run_jobs(
            scheduler.api.api_client, doc, inventory, nodes, marker, workdir, deadline,
            run_id or uuid.uuid4().hex, states=states, env=env, cancel=cancel,
        )  # fmt: skip
    return run_step(
        doc, inventory, nodes, marker, workdir, deadline,
        states=states, env=env, progress=progress, cancel=cancel,
    )  # fmt: skip
