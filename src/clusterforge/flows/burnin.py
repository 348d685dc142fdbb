"""`clusterforge burnin`: drain → iterations (each committed whole) → verdicts → records, certificates, pool.

The stage parts (options, an iteration's measurements, verdicts) are `clusterforge.burnin`; this flow adds
the plan's target (pool manager, the launcher's Slurm environment) and acts on the pool: a node that failed
is drained with the suspected component in the reason; a node that passed is resumed when the drain is
burn-in's own (or admitted by the admission policy with `--admit`).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clusterforge import targets
from clusterforge.burnin import issue
from clusterforge.burnin.execute import Executor, Launcher
from clusterforge.burnin.model import NodeVerdict
from clusterforge.burnin.runner import (
    Options,
    Outcome,
    Say,
    done,
    evaluation_of,
    measure_iteration,
    plan_extract,
)
from clusterforge.burnin.verdicts import Evaluation
from clusterforge.childenv import scrub_environ
from clusterforge.plan.expect import nodes_of
from clusterforge.pool import admission
from clusterforge.pool.base import PoolManager, ResumeRefused, sanitize_reason, wait_for
from clusterforge.progress import NodeProgress
from clusterforge.records import DEFAULT_LEASE_S, Store, signing
from clusterforge.records._util import iso, utcnow
from clusterforge.records.burnin import BurninDB, BurninError

__all__ = ["Options", "Outcome", "drain_reason", "launcher_for", "pool_actions", "run"]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def launcher_for(
    plan_doc: Mapping[str, Any], opts: Options, target_env: Mapping[str, str] | None = None
) -> Launcher | None:
    """The multi-node launcher; Slurm's gets the Slurm part of the target's environment (the lab: its
    controller's `SLURM_CONF`), nothing else of it (a job inherits its launcher's environment)."""
    if opts.launcher == "none":
        return None
    env: dict[str, str] = {}
    if opts.launcher == "slurm":
        env = {k: v for k, v in (target_env or {}).items() if k.startswith("SLURM_")}
    hosts = {n["name"]: n["mgmt_ip"] for n in plan_doc["nodes"]}
    return Launcher(opts.launcher, env, opts.slurm_mpi, True, hosts)


def run(
    plan_doc: Mapping[str, Any],
    inventory: Path,
    names: list[str],
    opts: Options,
    *,
    spec_path: str | None = None,
    resume: str | None = None,
    db_path: Path | None = None,
    admit: bool = False,
    say: Say = print,
    progress: NodeProgress | None = None,
) -> Outcome:
    scrub_environ()  # launchers and NCCL jobs inherit os.environ: no signing-key variables in it
    signing.signing_key()  # made on first use, before any node is touched: a key problem stops here
    store = Store(db_path)
    bdb = BurninDB(store.path)
    if resume:
        stored = bdb.get(resume)
        resume = stored.id  # RUN may be a unique prefix
        if stored.status != "running":
            raise BurninError(f"burn-in {stored.id} is already {stored.status}: nothing to resume")
        if stored.plan_hash and stored.plan_hash != plan_doc.get("plan_hash"):
            raise BurninError(
                f"the plan changed since burn-in {stored.id} started (plan {stored.plan_hash[:12]}, "
                f"now {str(plan_doc.get('plan_hash'))[:12]}): start a new burn-in"
            )
        names = stored.nodes
        opts = Options.from_stored(stored.options, stored.target_iterations, stored.duration_s)
    run_id = store.start_run(
        "burnin",
        str(plan_doc["cluster"]),
        plan_hash=plan_doc.get("plan_hash"),
        spec_path=spec_path,
        tier="burnin",
        argv=sys.argv,
        nodes=names,
    )
    burnin_id = resume or bdb.create(
        str(plan_doc["cluster"]),
        names,
        iterations=opts.iterations,
        duration_s=opts.duration_s,
        options=opts.as_dict(),
        plan_hash=plan_doc.get("plan_hash"),
        spec_path=spec_path,
        burnin_id=run_id,
        plan=plan_extract(plan_doc, names),
    )
    first = bdb.add_session(burnin_id, run_id)
    say(
        f"burn-in {burnin_id} ({'resumed, ' if resume else ''}session {run_id}): {len(names)} nodes, "
        f"from iteration {first}, "
        + (
            f"{opts.iterations} iterations"
            if opts.iterations is not None
            else f"{opts.duration_s:.0f} s of iterations"
        )
    )
    stop = threading.Event()
    threading.Thread(target=_beat, args=(store.path, run_id, DEFAULT_LEASE_S / 4, stop), daemon=True).start()
    target = targets.for_plan(plan_doc)
    pool = target.pool_manager(plan_doc)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    ex = Executor(plan_doc, inventory, names, opts.jobs)
    ex.progress = progress
    try:
        _drain(pool, store, run_id, burnin_id, names, opts, say)
        expects = nodes_of(dict(plan_doc), inventory)
        launcher = launcher_for(plan_doc, opts, target.environment(plan_doc))
        while not done(bdb, burnin_id, opts):
            it = bdb.next_iteration(burnin_id)
            started, t0 = iso(utcnow()), time.monotonic()
            rows = measure_iteration(ex, plan_doc, expects, names, opts, launcher)
            took = time.monotonic() - t0
            bdb.commit_iteration(burnin_id, it, run_id, started, took, rows)
            errors = sum(1 for m in rows if not m.ok)
            say(f"iteration {it} committed: {len(rows)} measurements, {errors} errors, {took:.1f} s")
    finally:
        signal.signal(signal.SIGTERM, previous)
        ex.close()
        stop.set()
    return finish(store, bdb, plan_doc, burnin_id, run_id, names, opts, pool, admit, say)


def _beat(db_path: Path, run_id: str, every: float, stop: threading.Event) -> None:
    store = Store(db_path)
    while not stop.wait(every):
        try:
            store.heartbeat(run_id)
        except Exception:  # finished meanwhile, or busy: the next beat retries
            if stop.is_set():
                break
    store.close()


def _drain(
    pool: PoolManager, store: Any, run_id: str, burnin_id: str, names: list[str], opts: Options, say: Say
) -> None:
    reason = issue.in_progress_reason(burnin_id)
    for n in names:
        if pool.drain(n, reason):
            store.record_pool_event(n, "drain", reason, run_id=run_id)
        else:
            say(f"{n}: already drained by someone else; burn-in runs on it and leaves that drain alone")
    wait_for(pool, names, ("drained",), timeout_s=opts.drain_timeout_s, poll_s=2.0)
    say(f"{len(names)} nodes drained ({reason})")


def finish(
    store: Any,
    bdb: BurninDB,
    plan_doc: Mapping[str, Any],
    burnin_id: str,
    run_id: str,
    names: list[str],
    opts: Options,
    pool: PoolManager,
    admit: bool,
    say: Say,
) -> Outcome:
    ev = evaluation_of(bdb, burnin_id)
    rows = bdb.measurements(burnin_id)
    parts = issue.serials(rows)
    digests = {n["name"]: n["expectation_digest"] for n in plan_doc["nodes"]}
    issue.record_results(store, run_id, ev, digests, parts)
    bdb.set_verdicts(burnin_id, [v.as_dict() for v in ev.nodes.values()])
    status = "passed" if ev.passed else "failed"
    failed = [n for n, v in ev.nodes.items() if v.verdict != "pass"]
    store.finish_run(run_id, status, f"burn-in {burnin_id}: {len(failed)} of {len(names)} nodes failed")
    issue.issue_certificates(store, plan_doc, run_id, ev, parts)
    actions = pool_actions(pool, store, run_id, ev, plan_doc, admit)
    its = bdb.iterations(burnin_id)
    bdb.finish(
        burnin_id,
        status,
        {
            "verdicts": {n: v.verdict for n, v in ev.nodes.items()},
            "fabric": [f.summary for f in ev.fabric],
            "actions": actions,
            "iterations": len(its),
            "sessions": len(bdb.sessions(burnin_id)),
        },
    )
    say(f"burn-in {burnin_id} {status}: {len(names) - len(failed)} of {len(names)} nodes passed")
    return Outcome(burnin_id, run_id, ev, actions, len(its))


def drain_reason(v: NodeVerdict) -> str:
    if not v.findings:
        return sanitize_reason(f"{issue.BURNIN_PREFIX} {v.node}: no measurement completed")
    more = len(v.findings) - 1
    head = f"{issue.BURNIN_PREFIX} {v.findings[0].summary}"
    return sanitize_reason(head + (f" (+{more} more)" if more else ""))


def pool_actions(
    pool: PoolManager, store: Any, run_id: str, ev: Evaluation, plan_doc: Mapping[str, Any], admit: bool
) -> dict[str, str]:
    """Drain failed nodes with the suspected component; put passing nodes back (our drain only)."""
    out: dict[str, str] = {}
    for node, v in ev.nodes.items():
        if v.verdict != "pass":
            reason = drain_reason(v)
            changed = pool.drain(node, reason)
            store.record_pool_event(node, "drain", reason, run_id=run_id)
            out[node] = f"drained: {reason}" if changed else "left drained by someone else"
            continue
        if admit:
            tiers = [str(t) for t in (plan_doc.get("certification") or {}).get("join_tiers") or ["quick"]]
            certs = [c for t in dict.fromkeys([*tiers, "burnin"]) for c in store.certificates(node, t)]
            decision = admission.decide(
                node, dict(plan_doc), certs, admission.history_from_store(store, node)
            )
            outcome = admission.apply(decision, pool, store=store)
            out[node] = outcome if decision.action == "admit" else f"{outcome}: {decision.reason}"
            continue
        state = pool.status([node]).get(node)
        if (
            state is not None
            and state.state in ("drained", "draining")
            and state.reason.startswith(issue.BURNIN_PREFIX)
        ):
            try:
                pool.resume(node)
                store.record_pool_event(node, "resume", "burn-in passed", run_id=run_id)
                out[node] = "resumed"
            except ResumeRefused as exc:
                out[node] = f"left drained: {exc}"
        else:
            out[node] = (
                f"left as it was ({state.state if state else 'unknown'}: {state.reason if state else ''})"
            )
    return out
