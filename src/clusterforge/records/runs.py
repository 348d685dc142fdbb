"""Runs: start, heartbeat, finish, stale detection, and the node lock that keeps runs from overlapping.

A run is written `running` when it starts and only `finish_run` gives it a final status, so a run that
did not finish can never read as passed. `mark_stale_incomplete` turns a `running` run whose process is
gone into `incomplete`: on this host by its PID (and the PID's start time, against PID reuse), for a run
of another host when its lease ran out (no heartbeat for `lease_s` seconds).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from clusterforge.records._util import (
    from_json,
    hostname,
    iso,
    parse_iso,
    pid_alive,
    pid_start,
    to_json,
    utcnow,
    who,
)
from clusterforge.records.db import Database
from clusterforge.records.model import NodesBusy, RecordsError, Run, RunStateError
from clusterforge.records.schema import FINAL_STATUSES, KINDS

DEFAULT_LEASE_S = 3600.0


def run_from_row(row: sqlite3.Row) -> Run:
    keys = row.keys()
    return Run(
        id=row["id"],
        kind=row["kind"],
        cluster=row["cluster"],
        status=row["status"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        plan_hash=row["plan_hash"],
        who=row["who"],
        host=row["host"],
        pid=row["pid"],
        pid_start=row["pid_start"],
        argv=from_json(row["argv"]),
        spec_path=row["spec_path"],
        tier=row["tier"],
        shard=row["shard"],
        message=row["message"],
        heartbeat_at=row["heartbeat_at"] if "heartbeat_at" in keys else None,
        lease_s=row["lease_s"] if "lease_s" in keys else None,
        log_dir=row["log_dir"] if "log_dir" in keys else None,
    )


def _is_stale(run: Run, now: datetime, here: str) -> tuple[bool, str]:
    if run.host == here and run.pid:
        if not pid_alive(run.pid, run.pid_start):
            return True, f"process {run.pid} on {here} is gone"
        return False, ""
    last = parse_iso(run.heartbeat_at or run.started_at)
    lease = run.lease_s if run.lease_s is not None else DEFAULT_LEASE_S
    if now - last > timedelta(seconds=lease):
        return True, f"no heartbeat from {run.host} since {iso(last)} (lease {lease:.0f} s)"
    return False, ""


class RunsMixin(Database):
    def start_run(
        self,
        kind: str,
        cluster: str,
        *,
        plan_hash: str | None = None,
        spec_path: str | None = None,
        tier: str | None = None,
        shard: str | None = None,
        argv: Sequence[str] | None = None,
        nodes: Iterable[str] = (),
        lease_s: float = DEFAULT_LEASE_S,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> str:
        """Record a new `running` run of this process and return its UUID.

        With `nodes`, the run also takes their lock in the same transaction: if another live run holds
        one of them, `NodesBusy` is raised and no run is recorded.
        """
        if kind not in KINDS:
            raise RecordsError(f"run kind must be one of {', '.join(KINDS)}; got {kind!r}")
        rid = run_id or str(uuid.uuid4())
        at = iso(now or utcnow())
        pid = os.getpid()
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (id, kind, cluster, plan_hash, started_at, status, who, host, pid,"
                " pid_start,"
                " argv, spec_path, tier, shard, heartbeat_at, lease_s)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    kind,
                    cluster,
                    plan_hash,
                    at,
                    who(),
                    hostname(),
                    pid,
                    pid_start(pid),
                    to_json(list(argv if argv is not None else sys.argv)),
                    spec_path,
                    tier,
                    shard,
                    at,
                    lease_s,
                ),
            )
            self._lock_nodes(db, rid, list(nodes), at)
        return rid

    def heartbeat(self, run_id: str, now: datetime | None = None) -> None:
        """Renew the lease of a running run (call it at least every `lease_s / 2` on long runs)."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND status = 'running'",
                (iso(now or utcnow()), run_id),
            )
            if cur.rowcount != 1:
                raise RunStateError(f"run {run_id} is not running: cannot renew its lease")

    def finish_run(
        self, run_id: str, status: str, message: str | None = None, now: datetime | None = None
    ) -> None:
        """Give a running run its final status (passed | failed | error) and release its nodes."""
        with self._write() as db:
            self._finish(db, run_id, status, message, iso(now or utcnow()))

    @staticmethod
    def _finish(db: sqlite3.Connection, run_id: str, status: str, message: str | None, at: str) -> None:
        """`finish_run` inside the caller's write transaction."""
        if status not in FINAL_STATUSES:
            raise RecordsError(f"final status must be one of {', '.join(FINAL_STATUSES)}; got {status!r}")
        row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunStateError(f"no run {run_id}")
        if row["status"] != "running":
            raise RunStateError(
                f"run {run_id} is {row['status']}, not running: its status stays "
                f"{row['status']} (a run marked incomplete cannot be finished later)"
            )
        db.execute(
            "UPDATE runs SET status = ?, ended_at = ?, message = ? WHERE id = ?",
            (status, at, message, run_id),
        )
        db.execute("DELETE FROM node_locks WHERE run_id = ?", (run_id,))

    def abandon_run(self, run_id: str, why: str, now: datetime | None = None) -> bool:
        """Mark a run this process gives up on (interrupted, crashed) `incomplete` now, rather than when its
        process is found gone; False when it was no longer running."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE runs SET status = 'incomplete', ended_at = ?, message = ?"
                " WHERE id = ? AND status = 'running'",
                (iso(now or utcnow()), f"did not finish: {why}", run_id),
            )
            if cur.rowcount != 1:
                return False
            db.execute("DELETE FROM node_locks WHERE run_id = ?", (run_id,))
            return True

    def mark_stale_incomplete(self, now: datetime | None = None) -> list[str]:
        """Turn every `running` run whose process is gone (or whose lease ran out) into `incomplete`."""
        with self._write() as db:
            return self._mark_stale(db, now or utcnow())

    def _mark_stale(self, db: sqlite3.Connection, now: datetime) -> list[str]:
        here = hostname()
        stale: list[str] = []
        for row in db.execute("SELECT * FROM runs WHERE status = 'running'").fetchall():
            run = run_from_row(row)
            dead, why = _is_stale(run, now, here)
            if dead:
                db.execute(
                    "UPDATE runs SET status = 'incomplete', ended_at = ?, message = ? WHERE id = ?",
                    (iso(now), f"did not finish: {why}", run.id),
                )
                db.execute("DELETE FROM node_locks WHERE run_id = ?", (run.id,))
                stale.append(run.id)
        return stale

    def get_run(self, run_id: str) -> Run:
        rows = self._all("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise RunStateError(f"no run {run_id}")
        return run_from_row(rows[0])

    def runs(
        self,
        *,
        cluster: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Runs, newest first, filtered by cluster, kind and status."""
        where, args = [], []
        for col, val in (("cluster", cluster), ("kind", kind), ("status", status)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY started_at DESC LIMIT ?"
        return [run_from_row(r) for r in self._all(sql, (*args, limit))]

    # --- node lock -------------------------------------------------------------------------------
    def acquire_nodes(self, run_id: str, nodes: Iterable[str], now: datetime | None = None) -> None:
        """Lock `nodes` for a running run; `NodesBusy` names the holder of any node another live run holds."""
        with self._write() as db:
            row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or row["status"] != "running":
                raise RunStateError(f"run {run_id} is not running: it cannot lock nodes")
            self._lock_nodes(db, run_id, list(nodes), iso(now or utcnow()))

    def _lock_nodes(self, db: sqlite3.Connection, run_id: str, nodes: list[str], at: str) -> None:
        if not nodes:
            return
        holders = self._holders(db, nodes, exclude=run_id)
        if holders:
            self._mark_stale(db, parse_iso(at))  # reclaim dead holders, then look again
            holders = self._holders(db, nodes, exclude=run_id)
        if holders:
            raise NodesBusy(holders)
        db.executemany(
            "INSERT OR REPLACE INTO node_locks (node, run_id, acquired_at) VALUES (?, ?, ?)",
            [(n, run_id, at) for n in sorted(set(nodes))],
        )

    @staticmethod
    def _holders(db: sqlite3.Connection, nodes: list[str], exclude: str | None = None) -> dict[str, Run]:
        marks = ",".join("?" * len(nodes))
        rows = db.execute(
            f"SELECT l.node AS lock_node, r.* FROM node_locks l JOIN runs r ON r.id = l.run_id "
            f"WHERE l.node IN ({marks}) AND r.status = 'running'",
            tuple(nodes),
        ).fetchall()
        return {row["lock_node"]: run_from_row(row) for row in rows if row["id"] != exclude}

    def node_holders(self, nodes: Iterable[str]) -> dict[str, Run]:
        """The live runs holding any of `nodes`."""
        nodes = list(nodes)
        if not nodes:
            return {}
        with self._read() as db:
            return self._holders(db, nodes)

    def release_nodes(self, run_id: str, nodes: Iterable[str] | None = None) -> None:
        """Release some (or all) nodes of a run before it finishes (e.g. a node done early)."""
        with self._write() as db:
            if nodes is None:
                db.execute("DELETE FROM node_locks WHERE run_id = ?", (run_id,))
            else:
                db.executemany(
                    "DELETE FROM node_locks WHERE run_id = ? AND node = ?", [(run_id, n) for n in nodes]
                )
