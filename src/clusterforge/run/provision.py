"""`clusterforge provision`: site.yml in rolling batches, then drain → reboot → check → resume.

The loop lives here, in Python between batches (see docs/provisioning.md): the controller owns the pool
(drain/resume through the pool manager), decides from every host's pending-reboot record which nodes to
reboot, and only resumes a node that came back and converged.
"""

from __future__ import annotations

import getpass
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

from clusterforge.errors import ClusterforgeError
from clusterforge.records.model import NodeOutcome, RunOutcome
from clusterforge.records.outcomes import recorded_run
from clusterforge.remote.inventory import plan_order, resolve_hosts
from clusterforge.remote.node_state import read_states
from clusterforge.run.ansible import PlaybookResult, run_playbook
from clusterforge.run.batches import OUT_OF_SERVICE, over_fail_limit, rollout_batches
from clusterforge.run.logs import PLAYBOOK_RAN, run_logs
from clusterforge.run.managed import Managed, applied_state
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
    extra_vars: dict[str, Any] = field(default_factory=dict)  # --extra-vars: win over every inventory layer


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


def pending_reboots(inventory: Path, hosts: list[str]) -> dict[str, list[str]]:
    """Read each host's pending-reboot record (one reason per line), written by the roles."""
    res = run_playbook(
        "pending.yml", inventory, limit=",".join(hosts), extravars={"clusterforge_pending_file": PENDING_FILE}
    )
    out: dict[str, list[str]] = {}
    for t in res.tasks:
        if t.task == "Read the pending-reboot record" and t.status in ("ok", "changed"):
            reasons = [ln.strip() for ln in t.stdout.splitlines() if ln.strip()]
            if reasons:
                out[t.host] = reasons
    return out


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
    hosts = plan_order(resolve_hosts(inventory, opts.limit), plan_doc)
    rollout = plan_doc["rollout"]
    env = dict(env or {})
    groups = rollout_batches(hosts, rollout["serial"], out_of_service(pool, hosts))
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
                _reboot_pending(report, inventory, good, opts, pool, progress, env, logs / f"batch-{i}")
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
        if not opts.check and not opts.tags and not opts.extra_vars:  # -e: not the plan's state
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
    if progress is not None:
        progress.phase(f"applied state: reading what site.yml manages on {len(todo)} nodes")
    reads = read_states(plan_doc, inventory, {n: m.to_dict() for n, m in todo.items()})
    for name, read in reads.items():
        rec = report.hosts[name]
        if read.state is None:
            rec.applied_error = read.error
            continue
        rec.applied = applied_state(plan_doc, name, todo[name], read.state)


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


def _reboot_pending(
    report: ProvisionReport,
    inventory: Path,
    hosts: list[str],
    opts: Options,
    pool: Pool | None,
    progress: Progress,
    env: dict[str, str] | None = None,
    logs: Path | None = None,
) -> None:
    pending = pending_reboots(inventory, hosts)
    for h, reasons in pending.items():
        report.hosts[h].pending_reboot = reasons
    if not pending or opts.no_reboot:
        return
    names = []
    progress.phase(f"drain → reboot → check → resume: {', '.join(sorted(pending))}")
    for h in sorted(pending):
        if pool is not None:
            try:
                # False: someone else drained it for another reason; reboot, but never resume it
                report.hosts[h].drained = bool(
                    pool.drain(h, f"clusterforge: reboot for {', '.join(pending[h])}")
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
    # check: converge again after boot (runtime settings, boot-time units); nothing may fail and
    # nothing may still be pending before the node goes back into the pool.
    res = run_playbook(
        "site.yml",
        inventory,
        limit=",".join(back),
        forks=opts.forks,
        on_event=progress.event,
        env=env,
        keep_artifacts=logs / "after-reboot" if logs else None,
    )
    for h in back:
        report.hosts[h].managed.add(res.managed.get(h, Managed()))
    still = pending_reboots(inventory, back)
    for h in back:
        hr = res.hosts.get(h)
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
