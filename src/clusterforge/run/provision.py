"""`clusterforge provision`: site.yml in rolling batches, then drain → reboot → check → resume.

The loop lives here, in Python between batches (see docs/provisioning.md): the controller owns the pool
(drain/resume through the pool manager), decides from every host's pending-reboot record which nodes to
reboot, and only resumes a node that came back and converged.
"""

from __future__ import annotations

import getpass
import json
import logging
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from clusterforge import assets
from clusterforge.errors import ClusterforgeError
from clusterforge.records.model import NodeOutcome, RunOutcome
from clusterforge.records.outcomes import recorded_run
from clusterforge.remote.inventory import plan_order, resolve_hosts
from clusterforge.remote.node_state import StateRead, read_states
from clusterforge.run.ansible import HostResult, PlaybookResult, run_playbook
from clusterforge.run.batches import OUT_OF_SERVICE, over_fail_limit, rollout_batches
from clusterforge.run.inputs import inputs_digest
from clusterforge.run.logs import PLAYBOOK_RAN, run_logs
from clusterforge.run.managed import Managed, applied_state, reboot_differences
from clusterforge.run.progress import Progress
from clusterforge.run.shard import forks_for

PENDING_FILE = "/var/lib/clusterforge/reboot-required"


log = logging.getLogger(__name__)


class Pool(Protocol):
    """What the loop needs of a pool manager (clusterforge.pool.PoolManager)."""

    def drain(self, node: str, reason: str) -> bool: ...
    def resume(self, node: str) -> bool: ...
    def status(self, nodes: Iterable[str] | None = None) -> Mapping[str, Any]: ...


@dataclass
class Options:
    limit: str | None = None
    tags: str | None = None
    check: bool = False
    diff: bool = False
    forks: int | None = None
    no_reboot: bool = False
    reboot_timeout: int = 600
    #: after the reboot converge every role again (as rolling.yml does), not only those that asked for it
    converge_all_after_reboot: bool = False
    extra_vars: dict[str, Any] = field(default_factory=dict)  # --extra-vars: win over every inventory layer
    #: node -> what a read found: converged, site.yml not run on it (`clusterforge.flows.converged`)
    converged: dict[str, str] = field(default_factory=dict)


@dataclass
class HostRecord:
    host: str
    status: str = "ok"  # ok | changed | failed | unreachable | skipped
    changed: int = 0
    failed_task: str = ""
    message: str = ""
    duration: float = 0.0
    pending_reboot: list[str] = field(default_factory=list)
    rebooted: bool = False
    drained: bool = False
    changed_tasks: list[str] = field(default_factory=list)
    managed: Managed = field(default_factory=Managed)  # what the site.yml runs manage on it
    applied: dict[str, Any] | None = None  # its state right after converging: `applied_state`
    applied_error: str = ""  # why it could not be read (the node's drift then runs the deep check)
    #: the state read back after the reboot (names, state): the applied state when nothing ran since
    read_back: tuple[dict[str, list[str]], dict[str, Any]] | None = None


@dataclass
class ProvisionReport:
    run_id: str
    cluster: str
    plan_hash: str
    check: bool
    started: float
    ended: float = 0.0
    aborted: str = ""
    tool_error: str = ""  # ansible-playbook itself failed (not a host): exit 1, not 3
    logs: str = ""
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    who: str = field(default_factory=lambda: getpass.getuser())
    where: str = field(default_factory=socket.gethostname)

    @property
    def failed(self) -> list[HostRecord]:
        return [h for h in self.hosts.values() if h.status in ("failed", "unreachable")]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.aborted and not self.tool_error

    def outcome(self) -> RunOutcome:
        """The run as the records keep it: `error` when ansible-playbook itself failed, `failed` when a
        host failed or was unreachable or the rollout stopped, else `passed`; each host's outcome."""
        hosts = sorted(self.hosts.values(), key=lambda h: h.host)
        counts = Counter(h.status for h in hosts)
        message = (
            f"{'check' if self.check else 'apply'}: {len(hosts)} hosts, "
            + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
            + f"; {sum(h.changed for h in hosts)} tasks changed"
        )
        for what, text in (("aborted", self.aborted), ("the tool failed", self.tool_error)):
            if text:
                message += f"; {what}: {text}"
        nodes = tuple(
            NodeOutcome(
                h.host,
                h.status,
                h.changed,
                round(h.duration, 3),
                h.failed_task or None,
                h.message or None,
                {
                    "pending_reboot": h.pending_reboot,
                    "rebooted": h.rebooted,
                    "drained": h.drained,
                    "changed_tasks": h.changed_tasks,
                    **({"applied": h.applied} if h.applied else {}),
                    **({"applied_error": h.applied_error} if h.applied_error else {}),
                },
            )
            for h in hosts
        )
        status = "error" if self.tool_error else "passed" if self.ok else "failed"
        return RunOutcome(status, message, nodes, self.logs or None)


def _merge(report: ProvisionReport, res: PlaybookResult) -> None:
    for name, h in res.hosts.items():
        rec = report.hosts.setdefault(name, HostRecord(name))
        rec.duration += h.duration
        rec.changed += h.changed
        rec.changed_tasks += h.changed_tasks
        rec.managed.add(res.managed.get(name, Managed()))
        order = ["ok", "changed", "failed", "unreachable"]
        if order.index(h.status) >= order.index(rec.status if rec.status in order else "ok"):
            rec.status = h.status
        if h.failed_task:
            rec.failed_task, rec.message = h.failed_task, h.message


@dataclass(frozen=True)
class Pending:
    """A host's pending-reboot record: its reasons (one per line), and the roles that recorded them (empty
    where the roles' fact file could not be read: then no role is known to own a reason)."""

    reasons: list[str]
    sources: frozenset[str] = frozenset()


def _sources(text: str) -> frozenset[str]:
    try:
        doc = json.loads(text)
    except ValueError:
        return frozenset()
    reasons = doc.get("reasons") if isinstance(doc, dict) else None
    if not isinstance(reasons, dict):
        return frozenset()
    return frozenset(str(k) for k, v in reasons.items() if v)


def read_pending(inventory: Path, hosts: list[str]) -> dict[str, Pending]:
    """Each host's pending-reboot record (written by the roles) and which roles wrote it."""
    res = run_playbook(
        "pending.yml", inventory, limit=",".join(hosts), extravars={"clusterforge_pending_file": PENDING_FILE}
    )
    reasons: dict[str, list[str]] = {}
    sources: dict[str, frozenset[str]] = {}
    for t in res.tasks:
        if t.status not in ("ok", "changed"):
            continue
        if t.task == "Read the pending-reboot record":
            lines = [ln.strip() for ln in t.stdout.splitlines() if ln.strip()]
            if lines:
                reasons[t.host] = lines
        elif t.task == "Read the pending-reboot sources":
            sources[t.host] = _sources(t.stdout)
    return {h: Pending(r, sources.get(h, frozenset())) for h, r in reasons.items()}


def pending_reboots(inventory: Path, hosts: list[str]) -> dict[str, list[str]]:
    """Read each host's pending-reboot record (one reason per line), written by the roles."""
    return {h: p.reasons for h, p in read_pending(inventory, hosts).items()}


def out_of_service(pool: Pool | None, hosts: list[str]) -> set[str]:
    """Hosts the pool says run no job (drained, down, unknown: e.g. never admitted). Without a pool nothing
    is known, so nothing is assumed idle: every host rolls in batches."""
    if pool is None or not hosts:
        return set()
    try:
        states = pool.status(hosts)
    except ClusterforgeError as e:  # the pool cannot say: assume every node serves (roll in batches)
        log.warning("pool status unavailable (%s): every host rolls in batches", e)
        return set()
    return {h for h in hosts if getattr(states.get(h), "state", "unknown") in OUT_OF_SERVICE}


def provision(
    plan_doc: dict[str, Any],
    inventory: Path,
    opts: Options,
    pool: Pool | None,
    console: Console | None = None,
    env: Mapping[str, str] | None = None,
    run_id: str | None = None,
) -> ProvisionReport:
    """Provision the hosts `opts.limit` selects; `env` is added to Ansible's environment (the target's:
    `clusterforge.targets`; the lab's BMC account for the bios role, a path, never the password)."""
    console = console or Console()
    report = ProvisionReport(
        run_id or uuid.uuid4().hex[:12], plan_doc["cluster"], plan_doc["plan_hash"], opts.check, time.time()
    )
    selected = plan_order(resolve_hosts(inventory, opts.limit), plan_doc)
    for h in selected:  # read as their last provision left them: left alone (never drained, never run)
        if h in opts.converged:
            report.hosts[h] = HostRecord(h, status="skipped", message=f"converged: {opts.converged[h]}")
    hosts = [h for h in selected if h not in opts.converged]
    rollout = plan_doc["rollout"]
    env = dict(env or {})
    groups = rollout_batches(hosts, rollout["serial"], out_of_service(pool, hosts)) if hosts else []
    logs = run_logs("provision", report.run_id)
    report.logs = str(logs)
    failed_total = 0
    progress = Progress(console, hosts)
    with progress:
        for i, batch in enumerate(groups, 1):
            progress.phase(f"batch {i}/{len(groups)}: site.yml")
            res = run_playbook(
                "site.yml",
                inventory,
                limit=",".join(batch),
                tags=opts.tags,
                check=opts.check,
                diff=opts.diff,
                forks=opts.forks or forks_for(len(batch)),
                on_event=progress.event,
                env=env,
                keep_artifacts=logs / f"batch-{i}",
                # the batch is the rollout unit: the play does not split it again (site.yml's own serial
                # is for ansible-playbook run by hand); the caller's -e still wins
                extravars={"clusterforge_rollout_serial": "100%", **(opts.extra_vars or {})},
            )
            _merge(report, res)
            if res.rc not in PLAYBOOK_RAN:
                report.tool_error = f"ansible-playbook site.yml rc {res.rc} ({res.status}); log: {logs}"
            for h in batch:  # a host the run never reached (no inventory match, a crash) did not converge
                if h not in res.hosts:
                    report.hosts[h] = HostRecord(
                        h,
                        status="failed",
                        failed_task="site.yml",
                        message=f"not run (ansible-playbook rc {res.rc}, {res.status})",
                    )
            if opts.diff and opts.check:
                progress.diffs(res.tasks)
            good = [h for h in batch if report.hosts.get(h, HostRecord(h)).status in ("ok", "changed")]
            if not opts.check and good:
                _reboot_pending(
                    report, plan_doc, inventory, good, opts, pool, progress, env, logs / f"batch-{i}"
                )
            failed_total += sum(
                1 for h in batch if report.hosts.get(h, HostRecord(h)).status in ("failed", "unreachable")
            )
            if report.tool_error:
                break
            if over_fail_limit(failed_total, len(hosts), rollout["max_fail_percentage"]) and i < len(groups):
                report.aborted = (
                    f"{failed_total} of {len(hosts)} hosts failed, over max_fail_percentage "
                    f"{rollout['max_fail_percentage']}%: later batches not started"
                )
                break
        if hosts and not opts.check and not opts.tags and not opts.extra_vars:  # -e: not the plan's state
            record_applied(report, plan_doc, inventory, progress)
    for h in hosts:
        stopped = report.aborted or report.tool_error
        report.hosts.setdefault(h, HostRecord(h, status="skipped" if stopped else "ok"))
    report.ended = time.time()
    return report


def record_applied(
    report: ProvisionReport, plan_doc: dict[str, Any], inventory: Path, progress: Progress | None = None
) -> None:
    """The state each converged host is in now, of everything its site.yml runs manage, kept with the run
    as the host's applied state (`clusterforge.drift.applied` compares the live node with it). Only after
    a whole site.yml (no --tags, no --extra-vars, not --check) that the host passed: anything else leaves
    its state unknown, and its next drift runs the deep check."""
    todo = {
        name: h.managed
        for name, h in report.hosts.items()
        if h.status in ("ok", "changed") and h.managed and not h.pending_reboot
    }
    if not todo:
        return
    fresh = {  # read back after a reboot, nothing run since, the same names: no second read
        name: StateRead(name, back[1])
        for name in todo
        if (back := report.hosts[name].read_back) is not None and back[0] == todo[name].to_dict()
    }
    todo_read = {n: m.to_dict() for n, m in todo.items() if n not in fresh}
    if progress is not None and todo_read:
        progress.phase(f"applied state: reading what site.yml manages on {len(todo_read)} nodes")
    reads = {**fresh, **(read_states(plan_doc, inventory, todo_read) if todo_read else {})}
    inputs = inputs_digest(inventory)
    for name, read in reads.items():
        rec = report.hosts[name]
        if read.state is None:
            rec.applied_error = read.error
            continue
        rec.applied = applied_state(plan_doc, name, todo[name], read.state, inputs)


def provision_recorded(
    plan_doc: dict[str, Any],
    inventory: Path,
    opts: Options,
    pool: Pool | None,
    console: Console | None = None,
    spec_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ProvisionReport:
    """`provision` as a provision run of the records (its id names the logs folder; tier `check` in check
    mode): started `running`, finished with each host's outcome; an exception leaves it `incomplete`."""
    with recorded_run(
        "provision",
        plan_doc["cluster"],
        plan_hash=plan_doc.get("plan_hash"),
        spec_path=spec_path,
        tier="check" if opts.check else None,
    ) as rec:
        report = provision(plan_doc, inventory, opts, pool, console, env, run_id=rec.run_id)
        rec.finish(report.outcome())
    return report


def _role_names() -> frozenset[str]:
    """site.yml's roles (each role is tagged with its name there): the sources a pending reason can name."""
    roles = assets.playbooks() / "roles"
    return frozenset(p.name for p in roles.iterdir() if (p / "tasks").is_dir())


def _reboot_pending(
    report: ProvisionReport,
    plan_doc: dict[str, Any],
    inventory: Path,
    hosts: list[str],
    opts: Options,
    pool: Pool | None,
    progress: Progress,
    env: dict[str, str] | None = None,
    logs: Path | None = None,
) -> None:
    pending = read_pending(inventory, hosts)
    for h, p in pending.items():
        report.hosts[h].pending_reboot = p.reasons
    if not pending or opts.no_reboot:
        return
    names = []
    progress.phase(f"drain → reboot → check → resume: {', '.join(sorted(pending))}")
    for h in sorted(pending):
        if pool is not None:
            try:
                # False: someone else drained it for another reason; reboot, but never resume it
                report.hosts[h].drained = bool(
                    pool.drain(h, f"clusterforge: reboot for {', '.join(pending[h].reasons)}")
                )
            except Exception as exc:  # never reboot a node that could not be taken out of the pool
                rec = report.hosts[h]
                rec.status, rec.failed_task = "failed", "drain before reboot"
                rec.message = (
                    f"could not drain through the pool manager ({exc}); not rebooted, reboot pending"
                )
                continue
        names.append(h)
    if not names:
        return
    # After the reboot only the roles that asked for it converge again; what the others manage (files,
    # packages, units, modules) is read right before the reboot and read back after it. A node whose
    # reasons name no role, whose state cannot be read, or that reads back differently converges in full.
    roles = _role_names()
    kept = {
        h: report.hosts[h].managed.to_dict()
        for h in names
        if pending[h].sources
        and pending[h].sources <= roles
        and report.hosts[h].managed
        and not opts.converge_all_after_reboot
    }
    before = {
        h: read.state
        for h, read in (read_states(plan_doc, inventory, kept).items() if kept else ())
        if read.state is not None
    }
    res = run_playbook(
        "reboot.yml",
        inventory,
        limit=",".join(names),
        forks=opts.forks,
        extravars={
            "clusterforge_pending_file": PENDING_FILE,
            "clusterforge_reboot_timeout": opts.reboot_timeout,
        },
        on_event=progress.event,
        keep_artifacts=logs / "reboot" if logs else None,
    )
    back = [h for h in names if res.hosts.get(h) and res.hosts[h].status in ("ok", "changed")]
    for h in names:
        if h not in back:
            rec = report.hosts[h]
            rec.status = "unreachable" if res.hosts.get(h) and res.hosts[h].unreachable else "failed"
            hr = res.hosts.get(h)
            rec.failed_task = hr.failed_task if hr else "reboot"
            rec.message = (hr.message if hr else "") or "did not come back from reboot; left drained"
    if not back:
        return
    for h in back:
        report.hosts[h].rebooted = True
    # the check: nothing may fail and nothing may still be pending before the node goes back into the pool
    results: dict[str, HostResult | None] = {}
    part = [h for h in back if h in before]
    full = [h for h in back if h not in before]

    def converge(on: list[str], tags: str | None, folder: str) -> None:
        res = run_playbook(
            "site.yml",
            inventory,
            limit=",".join(on),
            tags=tags,
            forks=opts.forks,
            on_event=progress.event,
            env=env,
            keep_artifacts=logs / folder if logs else None,
        )
        for h in on:
            report.hosts[h].managed.add(res.managed.get(h, Managed()))
            results[h] = res.hosts.get(h)

    if part:
        tags = sorted(set().union(*(pending[h].sources for h in part)))
        progress.phase(f"after the reboot: {', '.join(tags)} again on {', '.join(part)}, the rest read back")
        converge(part, ",".join(tags), "after-reboot")
        ok = [h for h in part if (hr := results[h]) is not None and hr.status in ("ok", "changed")]
        reads = read_states(plan_doc, inventory, {h: kept[h] for h in ok}) if ok else {}
        for h in ok:
            read = reads.get(h)
            diffs = (
                [f"state not read back ({read.error if read else 'no answer'})"]
                if read is None or read.state is None
                else reboot_differences(Managed.from_dict(kept[h]), before[h], read.state)
            )
            if diffs:
                report.hosts[h].message = f"after the reboot, {'; '.join(diffs)[:300]}: converged in full"
                log.warning("%s: after the reboot %s: site.yml again", h, "; ".join(diffs))
                full.append(h)
            elif read is not None and read.state is not None:
                report.hosts[h].read_back = (kept[h], read.state)
    if full:
        progress.phase(f"after the reboot: site.yml again on {', '.join(full)}")
        converge(full, None, "after-reboot-full" if part else "after-reboot")
    still = pending_reboots(inventory, back)
    for h in back:
        hr = results.get(h)
        rec = report.hosts[h]
        rec.pending_reboot = still.get(h, [])
        if hr is None or hr.status in ("failed", "unreachable") or h in still:
            rec.status = "failed"
            rec.failed_task = hr.failed_task if hr and hr.failed_task else "post-reboot check"
            rec.message = (
                hr.message
                if hr and hr.message
                else f"still pending after reboot: {', '.join(still.get(h, []))}"
            ) + "; left drained"
            continue
        if pool is not None and rec.drained:
            try:
                pool.resume(h)
                rec.drained = False
            except Exception as exc:
                rec.message = f"converged after reboot but not resumed: {exc}"
