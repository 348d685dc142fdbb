"""`clusterforge certify`: plan → lock the nodes in the records → (drain for full) → validators per node in
parallel → results, parts, verdicts → run finished → certificates → admission → reports."""

from __future__ import annotations

import getpass
import json
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge import targets
from clusterforge.certify.display import CertifyProgress, explain, table
from clusterforge.certify.issue import Recorder
from clusterforge.certify.results import (
    NodeResult,
    json_text,
    junit_text,
    summary,
    write_json,
    write_junit,
)
from clusterforge.certify.runner import TIER_MARKERS, certify_nodes
from clusterforge.childenv import scrub_environ
from clusterforge.errors import ClusterforgeError, ExitCode, InputError
from clusterforge.flows import admit as admission
from clusterforge.flows.node_side import bad_via, engine, node_side, split_by_scheduler
from clusterforge.flows.plan import load_plan
from clusterforge.plan.expect import nodes_of
from clusterforge.records import signing
from clusterforge.remote.inventory import resolve_hosts
from clusterforge.term import safe


@dataclass
class Outputs:
    junit: Path | None = None
    json: Path | None = None
    jobs: int | None = None
    fmt: str = "text"  # --format: text (the table only) | json | junit, to `output` or stdout
    output: Path | None = None
    # ssh: pytest per node from here | slurm / kubernetes: each node checks itself (a job step / a Job each)
    # | auto: the spec's pool manager's engine for the quick tier when it has one, else ssh
    via: str = "auto"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _fail_input(console: Console, message: str) -> int:
    console.print(f"[red]error[/]: {safe(message)}", highlight=False, soft_wrap=True)
    return int(ExitCode.BAD_INPUT)


def certify_flow(
    spec: Path, tier: str, limit: str | None, admit: bool, console: Console, outputs: Outputs | None = None
) -> int:
    """Certify the nodes of SPEC (or the `limit` pattern): 0 all pass, 3 any fail/error, 2 bad input,
    1 the tool itself could not run (e.g. the nodes are locked by another live run)."""
    outputs = outputs or Outputs()
    if tier not in TIER_MARKERS:
        return _fail_input(console, f"--tier must be one of {', '.join(TIER_MARKERS)}; got {tier!r}")
    if wrong := bad_via(outputs.via):
        return _fail_input(console, wrong)
    if outputs.via not in ("ssh", "auto") and tier != "quick":
        return _fail_input(
            console,
            f"--via {outputs.via} runs the quick tier only (the {tier} tier drains nodes and runs from here)",
        )
    try:
        plan, inventory = load_plan(spec)
    except InputError as exc:
        return _fail_input(console, exc.render())
    doc: dict[str, Any] = plan.doc
    names = resolve_hosts(inventory, limit)
    if not names:
        return _fail_input(console, f"--limit {limit!r} selects no node of {spec}")
    expects = nodes_of(doc, inventory)
    scrub_environ()  # validators and ansible never see the signing key's variables
    try:  # the signing key (made on first use) before any node is touched: a key problem stops here
        signing.signing_key()
    except ClusterforgeError as exc:
        return _fail_input(console, str(exc))
    target = targets.for_plan(doc)
    pool = target.pool_manager(doc) if admit or tier == "full" else None
    # runs the nodes' own checks (a Slurm step, Kubernetes Jobs); admits nothing
    via = outputs.via if tier == "quick" else "ssh"  # auto: the other tiers run from here
    scheduler, wrong = engine(target, doc, via, spec, "certify")
    if wrong:
        return _fail_input(console, wrong)
    try:
        rec = Recorder.start(doc["cluster"], doc["plan_hash"], spec, tier, names)
    except ClusterforgeError as exc:  # NodesBusy: another live run holds some of these nodes
        console.print(f"[red]error[/]: {safe(exc)}", highlight=False, soft_wrap=True)
        return int(exc.exit_code)
    console.print(
        f"[bold]»[/] certify {safe(tier)}: {len(names)} node(s) of {safe(doc['cluster'])}, run {rec.run_id} "
        f"({getpass.getuser()}@{socket.gethostname()}, plan {doc['plan_hash'][:12]})"
    )
    if tier == "full" and pool is not None:
        admission.drain_for_full_run(pool, names, rec.store, rec.run_id)
    started = time.time()
    workdir = Path(rec.store.path).parent / "certify" / rec.run_id
    cancel = threading.Event()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with CertifyProgress(console, names) as progress:
            if scheduler is not None:
                results = _through_scheduler(
                    console, doc, inventory, names, scheduler, workdir, progress, cancel, target, outputs,
                    rec.run_id,
                )  # fmt: skip
            else:
                results = certify_nodes(
                    doc,
                    inventory,
                    names,
                    tier,
                    jobs=outputs.jobs,
                    workdir=workdir,
                    progress=progress,
                    cancel=cancel,
                    env=target.environment(doc),
                )
    except KeyboardInterrupt:
        cancel.set()  # validator processes are killed; the run stays unfinished → incomplete, never passed
        console.print(f"[red]interrupted[/]: run {rec.run_id} left incomplete; no certificate issued")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    for name, res in results.items():
        rec.node_done(res, expects[name])
    ok = all(r.verdict == "pass" for r in results.values())
    rec.finish("passed" if ok else "failed", json.dumps(summary(results)))
    actions: dict[str, str] = {}
    issued: dict[str, dict[str, Any] | None] = {}
    for name, res in results.items():
        issued[name] = rec.issue(res, expects[name], tier)
        if pool is None:
            continue
        if admit:
            actions[name] = admission.admit_or_drain(doc, res, pool, rec.store, rec.run_id)
        elif res.verdict == "pass":  # full without --admit: back in the pool on a pass only
            actions[name] = "resumed" if pool.resume(name) else "-"
        else:
            actions[name] = admission.admit_or_drain(doc, res, pool, rec.store, rec.run_id)
    _cache_for_health_check(console, doc, inventory, issued)
    _report(console, doc, tier, rec, results, actions, started, outputs)
    return int(ExitCode.OK if ok else ExitCode.NOT_AS_DECLARED)


def _through_scheduler(
    console: Console,
    doc: dict[str, Any],
    inventory: Path,
    names: list[str],
    scheduler: Any,
    workdir: Path,
    progress: Any,
    cancel: threading.Event,
    target: Any,
    outputs: Outputs,
    run_id: str,
) -> dict[str, NodeResult]:
    """The quick tier run by the nodes the pool's engine can start work on (Slurm: not down and in
    slurm.conf; Kubernetes: a Ready node of the cluster); the others over SSH, side by side. Plan order."""
    env = target.environment(doc)
    engine, by_ssh = split_by_scheduler(scheduler, names, console)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="certify-via") as ex:
        ssh = ex.submit(
            certify_nodes,
            doc,
            inventory,
            by_ssh,
            "quick",
            jobs=outputs.jobs,
            workdir=workdir,
            progress=progress,
            cancel=cancel,
            env=env,
        )
        step = ex.submit(
            node_side, scheduler, doc, inventory, engine, workdir,
            env=env, progress=progress, cancel=cancel, run_id=run_id,
        )  # fmt: skip
        got = {**ssh.result(), **step.result().results}
    retry = [n for n in engine if n in step.result().unanswered]
    if retry and not cancel.is_set():  # the engine could not start them after all: as nodes not in it
        console.print(
            f"[yellow]{safe(scheduler.name)}[/]: no answer from {len(retry)} node(s) "
            f"({safe(', '.join(retry))}): over SSH",
            highlight=False,
        )
        got.update(
            certify_nodes(
                doc,
                inventory,
                retry,
                "quick",
                jobs=outputs.jobs,
                workdir=workdir,
                progress=progress,
                cancel=cancel,
                env=env,
            )
        )
    return {n: got[n] for n in names if n in got}


def _cache_for_health_check(
    console: Console, doc: dict[str, Any], inventory: Path, issued: dict[str, dict[str, Any] | None]
) -> None:
    """Leave each node with a passing certificate its expiry for the passive health check (health_cache)."""
    from clusterforge.flows import health_cache
    from clusterforge.remote.ssh import ssh_setup

    nodes = [n for n, c in issued.items() if c and c.get("verdict") == "pass"]
    if not nodes:
        return
    ssh = ssh_setup(doc, inventory, nodes)
    try:
        done = health_cache.push(doc, issued, health_cache.ssh_runner(ssh.config))
    finally:
        ssh.close()
    missed = {n: why for n, why in done.items() if why != "cached"}
    for n, why in sorted(missed.items()):
        console.print(f"[yellow]health check cache[/]: {safe(n)}: {safe(why)}", highlight=False)


def _report(
    console: Console,
    doc: dict[str, Any],
    tier: str,
    rec: Recorder,
    results: dict[str, NodeResult],
    actions: dict[str, str],
    started: float,
    outputs: Outputs,
) -> None:
    title = f"certify {tier} — run {rec.run_id} — {time.time() - started:.1f} s"
    console.print(table(title, results, actions))
    explain(console, results)
    meta = {
        "run_id": rec.run_id,
        "cluster": doc["cluster"],
        "plan_hash": doc["plan_hash"],
        "tier": tier,
        "who": getpass.getuser(),
        "where": socket.gethostname(),
        "started": started,
        "ended": time.time(),
        "certificates": {n: str(p) for n, p in rec.cert_paths.items()},
        "pool_actions": actions,
    }
    if outputs.json:
        console.print(f"results: {safe(write_json(outputs.json, meta, results))}")
    if outputs.junit:
        console.print(f"junit: {safe(write_junit(outputs.junit, f'certify-{tier}', results))}")
    if outputs.fmt != "text":
        text = json_text(meta, results) if outputs.fmt == "json" else junit_text(f"certify-{tier}", results)
        if outputs.output is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            outputs.output.parent.mkdir(parents=True, exist_ok=True)
            outputs.output.write_text(text, encoding="utf-8")
            console.print(f"{outputs.fmt}: {safe(outputs.output)}")
