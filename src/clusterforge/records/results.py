"""Node and check results of runs, and the queries that must never count an unfinished run."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from clusterforge.records._util import from_json, iso, to_json, utcnow
from clusterforge.records.db import Database
from clusterforge.records.model import CheckResult, NodeResult, RecordsError, RunStateError
from clusterforge.records.schema import VERDICTS

# Runs whose results count in history: they ended on their own. `error` runs are left out (the tool
# failed; their verdicts are not trusted), `running` and `incomplete` ones never count.
COUNTED_STATUSES = ("passed", "failed")
_HISTORY = (
    "SELECT n.*, r.kind, r.tier, r.status, r.ended_at FROM node_results n JOIN runs r ON r.id = n.run_id"
)


def _check_verdict(value: str, what: str) -> None:
    if value not in VERDICTS:
        raise RecordsError(f"{what} must be one of {', '.join(VERDICTS)}; got {value!r}")


def _node_result(row: sqlite3.Row) -> NodeResult:
    keys = row.keys()
    return NodeResult(
        run_id=row["run_id"],
        node=row["node"],
        verdict=row["verdict"],
        duration_s=row["duration_s"],
        expectation_digest=row["expectation_digest"],
        recorded_at=row["recorded_at"],
        kind=row["kind"] if "kind" in keys else None,
        tier=row["tier"] if "tier" in keys else None,
        run_status=row["status"] if "status" in keys else None,
        ended_at=row["ended_at"] if "ended_at" in keys else None,
    )


def _check_result(row: sqlite3.Row) -> CheckResult:
    return CheckResult(
        node=row["node"],
        check_id=row["check_id"],
        status=row["status"],
        expected=from_json(row["expected"]),
        found=from_json(row["found"]),
        evidence=from_json(row["evidence"]) or {},
        attempt=row["attempt"],
        duration_s=row["duration_s"],
        message=row["message"],
        fix=row["fix"],
        run_id=row["run_id"],
        recorded_at=row["recorded_at"],
    )


class ResultsMixin(Database):
    def _require_running(self, db: sqlite3.Connection, run_id: str) -> None:
        row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunStateError(f"no run {run_id}")
        if row["status"] != "running":
            raise RunStateError(
                f"run {run_id} is {row['status']}: results can only be added to a running run"
            )

    def add_node_result(
        self,
        run_id: str,
        node: str,
        verdict: str,
        *,
        duration_s: float | None = None,
        expectation_digest: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """The verdict of one node in a running run (pass | fail | error); a second call replaces it."""
        _check_verdict(verdict, "node verdict")
        with self._write() as db:
            self._require_running(db, run_id)
            db.execute(
                "INSERT OR REPLACE INTO node_results (run_id, node, verdict, duration_s, expectation_digest,"
                " recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, node, verdict, duration_s, expectation_digest, iso(now or utcnow())),
            )

    def add_check_results(
        self, run_id: str, results: Iterable[CheckResult], now: datetime | None = None
    ) -> None:
        """Check results of a running run; one row per (node, check, attempt), a repeat replaces it."""
        at = iso(now or utcnow())
        rows = []
        for r in results:
            _check_verdict(r.status, f"status of check {r.check_id}")
            rows.append(
                (
                    run_id,
                    r.node,
                    r.check_id,
                    r.status,
                    to_json(r.expected),
                    to_json(r.found),
                    to_json(r.evidence or {}),
                    r.attempt,
                    r.duration_s,
                    r.message,
                    r.fix,
                    at,
                )
            )
        with self._write() as db:
            self._require_running(db, run_id)
            db.executemany(
                "INSERT OR REPLACE INTO check_results (run_id, node, check_id, status, expected, found,"
                " evidence, attempt, duration_s, message, fix, recorded_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def add_check_result(self, run_id: str, result: CheckResult, now: datetime | None = None) -> None:
        self.add_check_results(run_id, [result], now)

    def node_results(self, run_id: str) -> list[NodeResult]:
        rows = self._all("SELECT * FROM node_results WHERE run_id = ? ORDER BY node", (run_id,))
        return [_node_result(r) for r in rows]

    def check_results(self, run_id: str, node: str | None = None) -> list[CheckResult]:
        sql = "SELECT * FROM check_results WHERE run_id = ?"
        args: tuple[str, ...] = (run_id,)
        if node is not None:
            sql += " AND node = ?"
            args += (node,)
        return [_check_result(r) for r in self._all(sql + " ORDER BY node, check_id, attempt", args)]

    def node_history(
        self, node: str, *, kind: str | None = "certify", since: datetime | None = None
    ) -> list[NodeResult]:
        """Verdicts of `node` in finished runs (passed/failed), oldest first.

        Running and incomplete runs never count.
        """
        sql = _HISTORY + f" WHERE n.node = ? AND r.status IN {COUNTED_STATUSES}"
        args: list[object] = [node]
        if kind is not None:
            sql += " AND r.kind = ?"
            args.append(kind)
        if since is not None:
            sql += " AND n.recorded_at >= ?"
            args.append(iso(since))
        return [_node_result(r) for r in self._all(sql + " ORDER BY n.recorded_at", tuple(args))]

    def latest_passing_certification(
        self, node: str, *, tier: str | None = None, expectation_digest: str | None = None
    ) -> NodeResult | None:
        """The newest `pass` of `node` in a finished certify run (never a running or incomplete one)."""
        sql = (
            _HISTORY + " WHERE n.node = ? AND n.verdict = 'pass' AND r.kind = 'certify'"
            f" AND r.status IN {COUNTED_STATUSES}"
        )
        args: list[object] = [node]
        if tier is not None:
            sql += " AND r.tier = ?"
            args.append(tier)
        if expectation_digest is not None:
            sql += " AND n.expectation_digest = ?"
            args.append(expectation_digest)
        rows = self._all(sql + " ORDER BY n.recorded_at DESC LIMIT 1", tuple(args))
        return _node_result(rows[0]) if rows else None

    def failed_checks(self, run_id: str, node: str) -> list[str]:
        """Ids of the checks of `node` whose last attempt in `run_id` did not pass."""
        rows = self._all(
            "SELECT check_id, status FROM check_results c WHERE run_id = ? AND node = ? AND attempt = "
            "(SELECT MAX(attempt) FROM check_results c2 WHERE c2.run_id = c.run_id AND c2.node = c.node"
            " AND c2.check_id = c.check_id) ORDER BY check_id",
            (run_id, node),
        )
        return [r["check_id"] for r in rows if r["status"] != "pass"]
