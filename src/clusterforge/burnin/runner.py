"""`clusterforge burnin`: drain → iterations (each committed whole) → verdicts → records, certificates, pool.

A burn-in run (`burnin_runs.id`, the RUN of `--resume RUN` and of `clusterforge report burnin RUN`) is
worked on by one or more *sessions*: each invocation is a records run of kind `burnin` holding the node
lock. A killed session leaves its records run `running` until the next one reclaims the lock (the records
mark it `incomplete`); `--resume RUN` starts a new session at the first iteration not committed.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.burnin import issue, pairs, suite
from clusterforge.burnin.analysis import AnalysisConfig
from clusterforge.burnin.execute import Executor, Launcher
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.verdicts import Evaluation, evaluate
from clusterforge.records._util import iso, utcnow
from clusterforge.records.burnin import BurninDB, BurninError

Say = Callable[[str], None]


@dataclass
class Options:
    iterations: int | None = None
    duration_s: float | None = None
    suite: suite.SuiteOptions = field(default_factory=suite.SuiteOptions)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    group_size: int = 8
    launcher: str = "slurm"  # slurm | mpirun | none
    slurm_mpi: str = "none"
    jobs: int = 8
    drain_timeout_s: float = 3600.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": asdict(self.suite),
            "analysis": self.analysis.as_dict(),
            "group_size": self.group_size,
            "launcher": self.launcher,
            "slurm_mpi": self.slurm_mpi,
            "jobs": self.jobs,
        }

    @classmethod
    def from_stored(cls, d: Mapping[str, Any], iterations: int | None, duration_s: float | None) -> Options:
        st = dict(d.get("suite") or {})
        st["counters"] = tuple(st.get("counters") or suite.SuiteOptions().counters)
        return cls(
            iterations,
            duration_s,
            suite.SuiteOptions(**st),
            AnalysisConfig.from_dict(d.get("analysis") or {}),
            int(d.get("group_size", 8)),
            str(d.get("launcher", "slurm")),
            str(d.get("slurm_mpi", "none")),
            int(d.get("jobs", 8)),
        )


@dataclass
class Outcome:
    burnin_id: str
    run_id: str
    evaluation: Evaluation
    actions: dict[str, str]
    iterations: int

    @property
    def exit_code(self) -> int:
        return 0 if self.evaluation.passed else 3


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def launcher_for(plan_doc: Mapping[str, Any], opts: Options) -> Launcher | None:
    if opts.launcher == "none":
        return None
    env: dict[str, str] = {}
    if opts.launcher == "slurm" and "SLURM_CONF" not in os.environ and plan_doc.get("target") == "lab":
        from clusterforge.lab.config import state_root

        conf = state_root(str(plan_doc["cluster"])) / "slurm" / "slurm.conf"
        if conf.exists():
            env["SLURM_CONF"] = str(conf)
    hosts = {n["name"]: n["mgmt_ip"] for n in plan_doc["nodes"]}
    return Launcher(opts.launcher, env, opts.slurm_mpi, True, hosts)


def pool_for(plan_doc: Mapping[str, Any]) -> Any:
    from clusterforge.pool.cli import manager_for

    return manager_for(dict(plan_doc))


def done(db: BurninDB, burnin_id: str, opts: Options) -> bool:
    if opts.iterations is not None:
        return db.next_iteration(burnin_id) > opts.iterations
    return db.elapsed_s(burnin_id) >= float(opts.duration_s or 0)


def measure_iteration(
    ex: Executor,
    plan_doc: Mapping[str, Any],
    expects: Mapping[str, Any],
    names: list[str],
    opts: Options,
    launcher: Launcher | None,
) -> list[Measurement]:
    """Everything one iteration measures: single-node suites (parallel), pair rounds, groups."""
    ex.connect(names)
    samples = ex.suites([expects[n] for n in names], opts.suite)
    out = [m for n in names for m in samples[n].measurements]
    chosen = pairs.select_pairs(plan_doc, names)
    out += ex.pairs(pairs.schedule(chosen), expects, opts.suite)
    if launcher is not None:
        groups = pairs.allreduce_groups(plan_doc, opts.group_size, names)
        out += ex.groups(groups, launcher, lambda n: int(expects[n].gpu["count"]), opts.suite)
    return out


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
) -> Outcome:
    from clusterforge.certify.expect import nodes_of
    from clusterforge.childenv import scrub_environ
    from clusterforge.records import DEFAULT_LEASE_S, Store, signing

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
    pool = pool_for(plan_doc)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    ex = Executor(plan_doc, inventory, names, opts.jobs)
    try:
        _drain(pool, store, run_id, burnin_id, names, opts, say)
        expects = nodes_of(dict(plan_doc), inventory)
        launcher = launcher_for(plan_doc, opts)
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
    from clusterforge.records import Store

    store = Store(db_path)
    while not stop.wait(every):
        try:
            store.heartbeat(run_id)
        except Exception:  # finished meanwhile, or busy: the next beat retries
            if stop.is_set():
                break
    store.close()


def _drain(
    pool: Any, store: Any, run_id: str, burnin_id: str, names: list[str], opts: Options, say: Say
) -> None:
    if pool is None:
        say("no pool manager in this build: nodes are not drained (run burn-in only on nodes out of service)")
        return
    from clusterforge.pool.base import wait_for

    reason = issue.in_progress_reason(burnin_id)
    for n in names:
        if pool.drain(n, reason):
            store.record_pool_event(n, "drain", reason, run_id=run_id)
        else:
            say(f"{n}: already drained by someone else; burn-in runs on it and leaves that drain alone")
    wait_for(pool, names, ("drained",), timeout_s=opts.drain_timeout_s, poll_s=2.0)
    say(f"{len(names)} nodes drained ({reason})")


def plan_extract(plan_doc: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """What the verdicts and the report need of the plan, for the nodes of one burn-in: their entries, SKUs,
    and cabling (node-leaf cables, and the uplinks of their leaves)."""
    keep = set(names)
    nodes = [n for n in plan_doc["nodes"] if n["name"] in keep]
    leaves = {r["leaf"] for n in nodes for r in n["rails"]}
    fabrics = []
    for f in plan_doc.get("fabrics", []):
        links = [
            x
            for x in pairs.links_of(f)
            if (x.kind == "node-leaf" and x.a_dev in keep) or (x.kind == "leaf-spine" and x.a_dev in leaves)
        ]
        fabrics.append(
            {
                "name": f["name"],
                "type": f.get("type"),
                "link_fields": ["kind", "a_dev", "a_port", "b_dev", "b_port"],
                "links": [[x.kind, x.a_dev, x.a_port, x.b_dev, x.b_port] for x in links],
            }
        )
    return {
        "cluster": plan_doc["cluster"],
        "plan_hash": plan_doc.get("plan_hash"),
        "target": plan_doc.get("target"),
        "certification": plan_doc.get("certification") or {},
        "nodes": nodes,
        "skus": {n["sku"]: plan_doc["skus"][n["sku"]] for n in nodes},
        "fabrics": fabrics,
    }


def evaluation_of(bdb: BurninDB, burnin_id: str) -> Evaluation:
    """Verdicts from what the database holds (the plan extract stored with the run, every iteration)."""
    stored = bdb.get(burnin_id)
    opts = Options.from_stored(stored.options, stored.target_iterations, stored.duration_s)
    rows = bdb.measurements(burnin_id)
    chosen = pairs.select_pairs(stored.plan, stored.nodes)
    return evaluate(rows, stored.plan, stored.nodes, chosen, opts.analysis, issue.serials(rows))


def finish(
    store: Any,
    bdb: BurninDB,
    plan_doc: Mapping[str, Any],
    burnin_id: str,
    run_id: str,
    names: list[str],
    opts: Options,
    pool: Any,
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
    actions = issue.pool_actions(pool, store, run_id, ev, plan_doc, admit) if pool is not None else {}
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
