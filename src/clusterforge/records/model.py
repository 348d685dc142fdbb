"""Rows of the records database as typed values, and the errors of the records package."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from clusterforge.errors import ClusterforgeError, ExitCode

RunKind = Literal["provision", "certify", "drift", "burnin"]
RunStatus = Literal["running", "passed", "failed", "incomplete", "error"]
FinalStatus = Literal["passed", "failed", "error"]
Verdict = Literal["pass", "fail", "error"]
PartKind = Literal["gpu", "nic"]
PoolAction = Literal["drain", "resume", "admit", "hold", "override"]


class RecordsError(ClusterforgeError):
    """The records database cannot do what was asked."""

    exit_code = ExitCode.TOOL_FAILED


class SchemaTooNew(RecordsError):
    """The database was written by a newer clusterforge."""


class RunStateError(RecordsError):
    """A run is not in the state the operation needs (e.g. finishing a run that is not running)."""


@dataclass(frozen=True)
class Run:
    id: str
    kind: str
    cluster: str
    status: str
    started_at: str
    ended_at: str | None = None
    plan_hash: str | None = None
    who: str | None = None
    host: str | None = None
    pid: int | None = None
    pid_start: int | None = None
    argv: list[str] | None = None
    spec_path: str | None = None
    tier: str | None = None
    shard: str | None = None
    message: str | None = None
    heartbeat_at: str | None = None
    lease_s: float | None = None
    log_dir: str | None = None  # where the run's logs are kept (provision: Ansible's output and events)

    def describe(self) -> str:
        where = (
            f"{self.who or '?'}@{self.host or '?'} pid {self.pid}" if self.pid else f"{self.who}@{self.host}"
        )
        return f"{self.kind} run {self.id} ({where}, started {self.started_at})"


class NodesBusy(RecordsError):
    """Some nodes are held by another live run; `holders` maps each such node to the holding run."""

    def __init__(self, holders: dict[str, Run]) -> None:
        self.holders = dict(holders)
        by_run: dict[str, list[str]] = {}
        runs: dict[str, Run] = {}
        for node, run in sorted(holders.items()):
            by_run.setdefault(run.id, []).append(node)
            runs[run.id] = run
        parts = [f"{', '.join(nodes)} held by {runs[rid].describe()}" for rid, nodes in by_run.items()]
        super().__init__(
            "nodes busy: "
            + "; ".join(parts)
            + ". Wait for that run to finish, or end it (a dead holder is reclaimed automatically)."
        )


@dataclass(frozen=True)
class NodeResult:
    run_id: str
    node: str
    verdict: str
    duration_s: float | None = None
    expectation_digest: str | None = None
    recorded_at: str | None = None
    # filled by history queries (join with runs)
    kind: str | None = None
    tier: str | None = None
    run_status: str | None = None
    ended_at: str | None = None


@dataclass(frozen=True)
class CheckResult:
    node: str
    check_id: str
    status: str
    expected: Any = None
    found: Any = None
    evidence: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    duration_s: float | None = None
    message: str | None = None
    fix: str | None = None
    run_id: str | None = None
    recorded_at: str | None = None


@dataclass(frozen=True)
class NodeOutcome:
    """What a provision or drift run did or found on one node (a `run_nodes` row).

    `outcome` — provision: ok | changed | failed | unreachable | skipped; drift: ok | drifted | unreachable |
    error (the check could not run). `changed` — provision: tasks that changed; drift: settings that drifted.
    """

    node: str
    outcome: str
    changed: int = 0
    duration_s: float | None = None
    failed_task: str | None = None
    message: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    recorded_at: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    """How a provision or drift run ended: its final status, a one-line summary, each node, its logs."""

    status: str  # passed | failed | error
    message: str
    nodes: tuple[NodeOutcome, ...] = ()
    log_dir: str | None = None


@dataclass(frozen=True)
class Part:
    kind: str  # gpu | nic
    slot: int
    serial: str


@dataclass(frozen=True)
class PartSighting:
    run_id: str
    node: str
    kind: str
    slot: int
    serial: str
    seen_at: str
    verdict: str | None = None  # the node's verdict in that run, when recorded
    failed_checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Swap:
    node: str
    kind: str
    slot: int
    old_serial: str
    new_serial: str
    last_seen_old: str
    first_seen_new: str
    run_id: str


@dataclass(frozen=True)
class Offender:
    serial: str
    kind: str
    failures: int  # distinct runs in which a node holding this part failed
    nodes: tuple[str, ...]
    runs: tuple[str, ...]


@dataclass(frozen=True)
class PoolEvent:
    id: str
    node: str
    at: str
    action: str
    reason: str | None = None
    who: str | None = None
    host: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class MergeReport:
    runs: int = 0
    runs_updated: int = 0
    node_results: int = 0
    check_results: int = 0
    part_sightings: int = 0
    certificates: int = 0
    pool_events: int = 0
    run_nodes: int = 0
    burnin_runs: int = 0
    burnin_runs_updated: int = 0
    burnin_sessions: int = 0
    burnin_iterations: int = 0
    burnin_measurements: int = 0
    burnin_verdicts: int = 0


@dataclass(frozen=True)
class Measurement:
    """One unit measured in one burn-in iteration (a `burnin_measurements` row). `value` None: the test did
    not produce a number (`error`)."""

    test: str
    node: str  # node, or the group label for group tests
    component: str = ""  # "gpu3", "rail2", "" for the node as a whole
    peer: str = ""  # pair: the other node; group: members, comma-separated
    value: float | None = None
    unit: str = ""
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.test, self.node, self.component, self.peer)

    @property
    def ok(self) -> bool:
        return self.value is not None and not self.error

    @property
    def missing(self) -> str:
        """The tool (or daemon) that was missing, so nothing was measured: never evidence against hardware."""
        return str(self.detail.get("missing") or "")

    @property
    def unmeasured(self) -> str:
        """The tool that measured nothing here (missing, crashed, timed out, output cut short or not
        recognised, or never reached): an error naming it, never evidence against hardware."""
        return str(self.detail.get("missing") or self.detail.get("not_run") or "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
