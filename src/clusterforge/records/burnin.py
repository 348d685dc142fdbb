"""Burn-in's tables of the records database (docs/burnin.md, "Records"): runs, sessions, iterations,
measurements, verdicts.

The tables (`burnin_*`) are part of the records schema (`records.schema`, version 3 on); a `BurninDB` is a
`records.db.Database`, so it shares the connection rules (WAL, busy timeout, every write one
`BEGIN IMMEDIATE` transaction) and the one migration chain.

An iteration is committed in ONE transaction (its `burnin_iterations` row and every measurement row): a run
killed at any point leaves whole iterations only. The primary key (burnin_id, iteration) makes a duplicate
impossible, and `commit_iteration` refuses any number but the next one, so none can go missing.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clusterforge.records._util import iso, utcnow
from clusterforge.records.db import Database
from clusterforge.records.model import Measurement


class BurninError(RuntimeError):
    pass


@dataclass(frozen=True)
class BurninRun:
    id: str
    cluster: str
    plan_hash: str | None
    spec_path: str | None
    nodes: list[str]
    target_iterations: int | None
    duration_s: float | None
    options: dict[str, Any]
    created_at: str
    status: str
    finished_at: str | None
    summary: dict[str, Any] | None
    plan: dict[str, Any]


class BurninDB(Database):
    """The burn-in tables of a records database (`$CLUSTERFORGE_DB` or the default one unless `path`)."""

    # -- runs -----------------------------------------------------------------------------------------
    def create(
        self,
        cluster: str,
        nodes: Iterable[str],
        *,
        iterations: int | None,
        duration_s: float | None,
        options: dict[str, Any],
        plan_hash: str | None = None,
        spec_path: str | None = None,
        burnin_id: str | None = None,
        plan: dict[str, Any] | None = None,
    ) -> str:
        """A new burn-in run; `plan` is the extract of the plan it judges by (its nodes, SKUs, cabling)."""
        if (iterations is None) == (duration_s is None):
            raise BurninError("a burn-in runs for a number of iterations or for a duration, one of the two")
        bid = burnin_id or str(uuid.uuid4())
        with self._write() as db:
            db.execute(
                "INSERT INTO burnin_runs (id, cluster, plan_hash, spec_path, nodes, target_iterations,"
                " duration_s, options, created_at, status, plan) VALUES (?,?,?,?,?,?,?,?,?, 'running', ?)",
                (
                    bid,
                    cluster,
                    plan_hash,
                    spec_path,
                    json.dumps(list(nodes)),
                    iterations,
                    duration_s,
                    json.dumps(options, sort_keys=True),
                    iso(utcnow()),
                    json.dumps(plan or {}, sort_keys=True),
                ),
            )
        return bid

    def get(self, burnin_id: str) -> BurninRun:
        rows = self._all("SELECT * FROM burnin_runs WHERE id = ?", (burnin_id,))
        if not rows:
            rows = self._all("SELECT * FROM burnin_runs WHERE id LIKE ?", (burnin_id + "%",))
            if len(rows) != 1:
                raise BurninError(
                    f"no burn-in run {burnin_id!r}" if not rows else f"{burnin_id!r} is ambiguous"
                )
        r = rows[0]
        return BurninRun(
            r["id"],
            r["cluster"],
            r["plan_hash"],
            r["spec_path"],
            json.loads(r["nodes"]),
            r["target_iterations"],
            r["duration_s"],
            json.loads(r["options"]),
            r["created_at"],
            r["status"],
            r["finished_at"],
            json.loads(r["summary"]) if r["summary"] else None,
            json.loads(r["plan"] or "{}"),
        )

    def runs(self, cluster: str | None = None) -> list[BurninRun]:
        sql, args = "SELECT id FROM burnin_runs", tuple[str, ...]()
        if cluster:
            sql, args = sql + " WHERE cluster = ?", (cluster,)
        return [self.get(r["id"]) for r in self._all(sql + " ORDER BY created_at DESC", args)]

    def add_session(self, burnin_id: str, run_id: str) -> int:
        """Record that records run `run_id` (one invocation) works on this burn-in; returns its first
        iteration (the next one not committed)."""
        with self._write() as db:
            first = self._next(db, burnin_id)
            db.execute(
                "INSERT INTO burnin_sessions VALUES (?,?,?,?)", (burnin_id, run_id, iso(utcnow()), first)
            )
        return first

    def sessions(self, burnin_id: str) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._all(
                "SELECT * FROM burnin_sessions WHERE burnin_id = ? ORDER BY started_at", (burnin_id,)
            )
        ]

    def finish(self, burnin_id: str, status: str, summary: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE burnin_runs SET status = ?, finished_at = ?, summary = ? WHERE id = ?",
                (status, iso(utcnow()), json.dumps(summary, sort_keys=True), burnin_id),
            )

    # -- iterations -----------------------------------------------------------------------------------
    @staticmethod
    def _next(db: sqlite3.Connection, burnin_id: str) -> int:
        row = db.execute(
            "SELECT COALESCE(MAX(iteration), 0) FROM burnin_iterations WHERE burnin_id = ?", (burnin_id,)
        ).fetchone()
        return int(row[0]) + 1

    def next_iteration(self, burnin_id: str) -> int:
        with self._lock:
            return self._next(self._db, burnin_id)

    def elapsed_s(self, burnin_id: str) -> float:
        row = self._all(
            "SELECT COALESCE(SUM(duration_s), 0) AS s FROM burnin_iterations WHERE burnin_id = ?",
            (burnin_id,),
        )
        return float(row[0]["s"])

    def commit_iteration(
        self,
        burnin_id: str,
        iteration: int,
        run_id: str,
        started_at: str,
        duration_s: float,
        measurements: Iterable[Measurement],
    ) -> None:
        """Store one whole iteration atomically; only the next iteration number is accepted."""
        with self._write() as db:
            expected = self._next(db, burnin_id)
            if iteration != expected:
                raise BurninError(f"burn-in {burnin_id}: iteration {iteration} offered, {expected} is next")
            db.execute(
                "INSERT INTO burnin_iterations VALUES (?,?,?,?,?,?)",
                (burnin_id, iteration, run_id, started_at, iso(utcnow()), duration_s),
            )
            db.executemany(
                "INSERT INTO burnin_measurements VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        burnin_id,
                        iteration,
                        m.test,
                        m.node,
                        m.component,
                        m.peer,
                        m.value,
                        m.unit,
                        m.error or None,
                        json.dumps(m.detail, sort_keys=True) if m.detail else None,
                    )
                    for m in measurements
                ],
            )

    def iterations(self, burnin_id: str) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._all(
                "SELECT * FROM burnin_iterations WHERE burnin_id = ? ORDER BY iteration", (burnin_id,)
            )
        ]

    def measurements(self, burnin_id: str) -> list[tuple[int, Measurement]]:
        return measurements(self._all(MEASUREMENTS_SQL, (burnin_id,)))

    # -- verdicts -------------------------------------------------------------------------------------
    def set_verdicts(self, burnin_id: str, verdicts: Iterable[dict[str, Any]]) -> None:
        with self._write() as db:
            db.execute("DELETE FROM burnin_verdicts WHERE burnin_id = ?", (burnin_id,))
            db.executemany(
                "INSERT INTO burnin_verdicts VALUES (?,?,?,?,?)",
                [
                    (
                        burnin_id,
                        v["node"],
                        v["verdict"],
                        json.dumps(v["findings"], sort_keys=True),
                        iso(utcnow()),
                    )
                    for v in verdicts
                ],
            )

    def verdicts(self, burnin_id: str) -> dict[str, dict[str, Any]]:
        return {
            r["node"]: {"verdict": r["verdict"], "findings": json.loads(r["findings"])}
            for r in self._all("SELECT * FROM burnin_verdicts WHERE burnin_id = ?", (burnin_id,))
        }


MEASUREMENTS_SQL = "SELECT * FROM burnin_measurements WHERE burnin_id = ? ORDER BY iteration, rowid"


def measurements(rows: Iterable[sqlite3.Row]) -> list[tuple[int, Measurement]]:
    """(iteration, Measurement) of burnin_measurements rows (MEASUREMENTS_SQL), in their order."""
    return [
        (
            int(r["iteration"]),
            Measurement(
                r["test"],
                r["node"],
                r["component"],
                r["peer"],
                r["value"],
                r["unit"] or "",
                r["error"] or "",
                json.loads(r["detail"]) if r["detail"] else {},
            ),
        )
        for r in rows
    ]
