"""Provision and drift runs in the records: per node what the run did or found (`run_nodes`), where its
logs are (`runs.log_dir`), and `recorded_run`, the context a flow wraps such a run in.

with recorded_run("provision", "lab", plan_hash=h, spec_path=s) as rec:   # a `running` run, heartbeat
    report = provision(..., run_id=rec.run_id)
    rec.finish(report.outcome())      # node rows, log folder and final status in one transaction

A run left by an exception (Ctrl-C, a crash) is marked `incomplete` on the way out, never passed.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusterforge.records._util import from_json, iso, to_json, utcnow
from clusterforge.records.db import Database
from clusterforge.records.model import NodeOutcome, RecordsError, RunOutcome
from clusterforge.records.runs import DEFAULT_LEASE_S, RunsMixin
from clusterforge.records.schema import NODE_OUTCOMES

if TYPE_CHECKING:
    from clusterforge.records.store import Store

OUTCOME_KINDS = ("provision", "drift")


def _node_outcome(row: sqlite3.Row) -> NodeOutcome:
    return NodeOutcome(
        node=row["node"],
        outcome=row["outcome"],
        changed=int(row["changed"]),
        duration_s=row["duration_s"],
        failed_task=row["failed_task"],
        message=row["message"],
        detail=from_json(row["detail"]) or {},
        run_id=row["run_id"],
        recorded_at=row["recorded_at"],
    )


class OutcomesMixin(Database):
    def finish_with_outcome(self, run_id: str, outcome: RunOutcome, now: datetime | None = None) -> None:
        """Finish a running run with its node outcomes and log folder, all in one transaction (a finished
        run always has its node rows)."""
        at = iso(now or utcnow())
        rows = []
        for n in outcome.nodes:
            if n.outcome not in NODE_OUTCOMES:
                raise RecordsError(
                    f"{n.node}: node outcome must be one of {', '.join(NODE_OUTCOMES)}; got {n.outcome!r}"
                )
            rows.append(
                (
                    run_id,
                    n.node,
                    n.outcome,
                    int(n.changed),
                    n.duration_s,
                    n.failed_task or None,
                    n.message or None,
                    to_json(n.detail) if n.detail else None,
                    at,
                )
            )
        with self._write() as db:
            RunsMixin._finish(db, run_id, outcome.status, outcome.message, at)
            db.execute("UPDATE runs SET log_dir = ? WHERE id = ?", (outcome.log_dir, run_id))
            db.executemany(
                "INSERT OR REPLACE INTO run_nodes (run_id, node, outcome, changed, duration_s, failed_task,"
                " message, detail, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def node_outcomes(self, run_id: str) -> list[NodeOutcome]:
        """What the run recorded per node, by node name."""
        return [
            _node_outcome(r)
            for r in self._all("SELECT * FROM run_nodes WHERE run_id = ? ORDER BY node", (run_id,))
        ]

    def latest_applied(self, cluster: str, nodes: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        """Per node, the applied state its latest provision run recorded (`run.managed.applied_state`);
        None when that run left none: the node failed there, was only checked in part (--tags), or the
        run could not read it. Check-mode runs and nodes a run skipped do not count: they changed
        nothing. A node never provisioned here: None."""
        wanted = list(dict.fromkeys(nodes))
        out: dict[str, dict[str, Any] | None] = dict.fromkeys(wanted)
        latest: dict[str, str] = {}
        for chunk in (wanted[i : i + 500] for i in range(0, len(wanted), 500)):
            marks = ",".join("?" * len(chunk))
            rows = self._all(
                "SELECT rn.node, rn.outcome, rn.detail, rn.recorded_at FROM run_nodes rn"
                " JOIN runs r ON r.id = rn.run_id"
                " WHERE r.kind = 'provision' AND r.cluster = ? AND (r.tier IS NULL OR r.tier != 'check')"
                f" AND r.status IN ('passed', 'failed', 'error') AND rn.outcome != 'skipped'"
                f" AND rn.node IN ({marks})",
                (cluster, *chunk),
            )
            for row in rows:
                if row["recorded_at"] < latest.get(row["node"], ""):
                    continue
                latest[row["node"]] = row["recorded_at"]
                detail = from_json(row["detail"]) or {}
                ok = row["outcome"] in ("ok", "changed")
                out[row["node"]] = detail.get("applied") if ok else None
        return out

    def find_run(self, prefix: str) -> str:
        """The id of the run whose id is `prefix` or starts with it (one run only)."""
        rows = self._all("SELECT id FROM runs WHERE id = ?", (prefix,)) or self._all(
            "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        )
        if len(rows) != 1:
            raise RecordsError(f"no run {prefix!r}" if not rows else f"run id {prefix!r} is ambiguous")
        return str(rows[0]["id"])


class RecordedRun:
    """A provision or drift run in progress: its id, and `finish` with the outcome."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.finished = False

    def finish(self, outcome: RunOutcome) -> None:
        self.store.finish_with_outcome(self.run_id, outcome)
        self.finished = True


def _beat(db_path: Path, run_id: str, every: float, stop: threading.Event) -> None:
    """Renew the run's lease until `stop` (a run of another host counts as gone once its lease ran out)."""
    from clusterforge.records.store import Store

    with Store(db_path) as store:
        while not stop.wait(every):
            try:
                store.heartbeat(run_id)
            except RecordsError:  # finished meanwhile
                return
            except sqlite3.Error:  # busy past the timeout: the next beat retries
                continue


@contextmanager
def recorded_run(
    kind: str,
    cluster: str,
    *,
    plan_hash: str | None = None,
    spec_path: str | Path | None = None,
    shard: str | None = None,
    tier: str | None = None,
    nodes: Iterable[str] = (),
    db: str | Path | None = None,
) -> Iterator[RecordedRun]:
    """Record a `running` provision or drift run for the block (no node lock unless `nodes`; `tier` "check"
    for a provision in check mode); the block calls `finish`. An exception out of the block, or a block
    that did not finish, leaves it `incomplete`."""
    from clusterforge.records.store import Store

    if kind not in OUTCOME_KINDS:
        raise RecordsError(f"recorded_run is for {' and '.join(OUTCOME_KINDS)} runs; got {kind!r}")
    with Store(db) as store:
        rid = store.start_run(
            kind,
            cluster,
            plan_hash=plan_hash,
            spec_path=str(spec_path) if spec_path is not None else None,
            shard=shard,
            tier=tier,
            argv=sys.argv,
            nodes=nodes,
        )
        rec = RecordedRun(store, rid)
        stop = threading.Event()
        beat = threading.Thread(target=_beat, args=(store.path, rid, DEFAULT_LEASE_S / 4, stop), daemon=True)
        beat.start()
        try:
            yield rec
        except BaseException as exc:
            if not rec.finished:
                store.abandon_run(rid, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            raise
        finally:
            stop.set()
            beat.join(timeout=5)
        if not rec.finished:
            store.abandon_run(rid, "the flow ended without recording an outcome")
