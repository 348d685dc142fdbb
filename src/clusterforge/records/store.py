"""`Store`: the records database (runs, results, parts, certificates, pool events, node outcomes of
provision and drift runs) and its merge.

store = Store()                      # $CLUSTERFORGE_DB or ~/.local/state/clusterforge/records.db
run = store.start_run("certify", "lab", plan_hash=..., tier="quick", nodes=["ib-01"])
store.add_check_result(run, CheckResult(node="ib-01", check_id="gpu.count", status="pass", ...))
store.add_node_result(run, "ib-01", "pass", expectation_digest=...)
store.finish_run(run, "passed")
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from clusterforge.records import certificate as certmod
from clusterforge.records import signing
from clusterforge.records._util import hostname, iso, utcnow, who
from clusterforge.records.db import Database, connect, migrate
from clusterforge.records.model import MergeReport, PoolEvent, RecordsError
from clusterforge.records.outcomes import OutcomesMixin
from clusterforge.records.parts import PartsMixin
from clusterforge.records.results import ResultsMixin
from clusterforge.records.runs import RunsMixin
from clusterforge.records.schema import POOL_ACTIONS
from clusterforge.records.shardcheck import ShardRejected, shard_problems
from clusterforge.records.signing import TrustedKeys

# Tables copied by merge_from, with the key that makes a row the same row in both databases.
_MERGED = (
    ("runs", "id"),
    ("node_results", "run_id, node"),
    ("check_results", "run_id, node, check_id, attempt"),
    ("part_sightings", "run_id, node, kind, slot"),
    ("certificates", "digest"),
    ("pool_events", "id"),
    ("run_nodes", "run_id, node"),
    # burn-in: parents before children (foreign keys)
    ("burnin_runs", "id"),
    ("burnin_sessions", "burnin_id, run_id"),
    ("burnin_iterations", "burnin_id, iteration"),
    ("burnin_measurements", "burnin_id, iteration, test, node, component, peer"),
    ("burnin_verdicts", "burnin_id, node"),
)


class CertificatesMixin(Database):
    def record_certificate(
        self,
        cert: Mapping[str, Any],
        path: str | Path | None = None,
        now: datetime | None = None,
        *,
        trusted: TrustedKeys | None = None,
    ) -> None:
        """Record an issued certificate (signed JSON) and where it was written; a re-record is a no-op.

        A certificate that does not verify (`certificate.verify_seal` with `trusted`, default the trusted
        keys) is refused."""
        res = certmod.verify_seal(cert, trusted)
        if not res.ok:
            raise RecordsError(
                "refusing to record a certificate that does not verify: " + "; ".join(res.reasons)
            )
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO certificates (digest, cluster, node, tier, expectation_digest,"
                " verdict,"
                " issued_at, valid_until, run_id, path, body, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    cert["digest"],
                    cert.get("cluster"),
                    cert["node"],
                    cert["tier"],
                    cert["expectation_digest"],
                    cert["verdict"],
                    cert["issued_at"],
                    cert["valid_until"],
                    (cert.get("issuer") or {}).get("run_id"),
                    str(path) if path else None,
                    json.dumps(cert, sort_keys=True),
                    iso(now or utcnow()),
                ),
            )

    def certificates(
        self, node: str, tier: str | None = None, *, finished_only: bool = True
    ) -> list[dict[str, Any]]:
        """Certificates of `node`, newest first. With `finished_only` (the default), only those with a run
        behind them: a certificate whose run is not recorded, is still running, incomplete or errored, or
        recorded no result for the node is left out."""
        sql = "SELECT c.body FROM certificates c LEFT JOIN runs r ON r.id = c.run_id WHERE c.node = ?"
        args: list[object] = [node]
        if tier is not None:
            sql += " AND c.tier = ?"
            args.append(tier)
        if finished_only:
            sql += (
                " AND r.status IN ('passed', 'failed') AND EXISTS"
                " (SELECT 1 FROM node_results n WHERE n.run_id = c.run_id AND n.node = c.node)"
            )
        rows = self._all(sql + " ORDER BY c.issued_at DESC, c.recorded_at DESC", tuple(args))
        return [json.loads(r["body"]) for r in rows]

    def latest_certificates(
        self, cluster: str, nodes: Iterable[str], tier: str | None = None
    ) -> dict[str, dict[str, Any] | None]:
        """Newest certificate of each node of `cluster` (finished runs only; None when it has none)."""
        out: dict[str, dict[str, Any] | None] = {}
        for node in nodes:
            mine = [c for c in self.certificates(node, tier) if c.get("cluster") in (cluster, None)]
            out[node] = mine[0] if mine else None
        return out

    def issue_certificate(
        self, cert: Mapping[str, Any], root: Path | None = None, *, trusted: TrustedKeys | None = None
    ) -> Path:
        """Write the certificate atomically (0600) to the certificates folder and record it here."""
        keys = signing.trusted_keys() if trusted is None else trusted
        res = certmod.verify_seal(cert, keys)
        if not res.ok:
            raise RecordsError(
                "refusing to issue a certificate that does not verify: " + "; ".join(res.reasons)
            )
        path = certmod.write(cert, root)
        self.record_certificate(cert, path, trusted=keys)
        return path


class EventsMixin(Database):
    def record_pool_event(
        self,
        node: str,
        action: str,
        reason: str | None = None,
        *,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> str:
        """Audit one pool action on a node (drain, resume, admit, hold, override)."""
        if action not in POOL_ACTIONS:
            raise RecordsError(f"pool action must be one of {', '.join(POOL_ACTIONS)}; got {action!r}")
        eid = str(uuid.uuid4())
        with self._write() as db:
            db.execute(
                "INSERT INTO pool_events (id, node, at, action, reason, who, host, run_id)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (eid, node, iso(now or utcnow()), action, reason, who(), hostname(), run_id),
            )
        return eid

    def pool_events(self, node: str, since: datetime | None = None) -> list[PoolEvent]:
        sql, args = "SELECT * FROM pool_events WHERE node = ?", [node]
        if since is not None:
            sql += " AND at >= ?"
            args.append(iso(since))
        return [PoolEvent(**dict(r)) for r in self._all(sql + " ORDER BY at", tuple(args))]


class Store(RunsMixin, ResultsMixin, PartsMixin, CertificatesMixin, EventsMixin, OutcomesMixin):
    """The records database. Safe for several processes at once; one `Store` per thread."""

    def merge_from(self, other_path: str | Path, *, trusted: TrustedKeys | None = None) -> MergeReport:
        """Import runs, results, parts, certificates, pool events, the node outcomes of provision and drift
        runs, and burn-ins (runs, sessions, iterations, measurements, verdicts) of another records database.

        Every certificate of the other database is checked first (`shardcheck.shard_problems`: signed by a
        trusted key, columns as signed, its run and node result present); any failure raises
        `ShardRejected` and nothing is merged.

        Rows are matched by their keys (run UUIDs, certificate digests, event UUIDs), so merging twice,
        or merging databases that share rows, adds nothing twice. A run or burn-in still `running` here
        takes the final status it has there. The other database is brought to this schema version first.
        """
        other = Path(other_path).expanduser()
        if not other.is_file():
            raise RecordsError(f"{other}: no such records database")
        if other.resolve() == self.path.resolve():
            raise RecordsError("cannot merge a records database into itself")
        odb = connect(other)
        try:
            migrate(odb)
        finally:
            odb.close()
        counts: dict[str, int] = {}
        with self._lock:
            db = self._db
            db.execute("ATTACH DATABASE ? AS other", (str(other),))  # not allowed inside a transaction
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    problems = shard_problems(db, "other", trusted)
                    if problems:
                        raise ShardRejected(str(other_path), problems)
                    for table, key in _MERGED:
                        counts[table] = self._merge_table(db, table, key)
                    counts["runs_updated"] = db.execute(
                        "UPDATE runs SET status = o.status, ended_at = o.ended_at, message = o.message,"
                        " log_dir = o.log_dir"
                        " FROM other.runs o"
                        " WHERE runs.id = o.id AND runs.status = 'running' AND o.status != 'running'"
                    ).rowcount
                    counts["burnin_runs_updated"] = db.execute(
                        "UPDATE burnin_runs SET status = o.status, finished_at = o.finished_at,"
                        " summary = o.summary FROM other.burnin_runs o"
                        " WHERE burnin_runs.id = o.id AND burnin_runs.status = 'running'"
                        " AND o.status != 'running'"
                    ).rowcount
                    db.execute(
                        "DELETE FROM node_locks"
                        " WHERE run_id IN (SELECT id FROM runs WHERE status != 'running')"
                    )
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            finally:
                db.execute("DETACH DATABASE other")
        return MergeReport(**counts)

    @staticmethod
    def _merge_table(db: sqlite3.Connection, table: str, key: str) -> int:
        cols = [r["name"] for r in db.execute(f"PRAGMA main.table_info({table})").fetchall()]
        if table == "check_results":
            cols = [c for c in cols if c != "id"]  # local row ids differ between databases
        names = ", ".join(cols)
        keys = [k.strip() for k in key.split(",")]
        match = " AND ".join(f"m.{k} = o.{k}" for k in keys)
        cur = db.execute(
            f"INSERT INTO main.{table} ({names})"
            f" SELECT {', '.join('o.' + c for c in cols)} FROM other.{table} o"
            f" WHERE NOT EXISTS (SELECT 1 FROM main.{table} m WHERE {match})"
        )
        return cur.rowcount


def latest_certificates(
    cluster: str, nodes: Iterable[str], *, tier: str | None = None, db: str | Path | None = None
) -> dict[str, dict[str, Any] | None]:
    """`Store.latest_certificates` on the default database (or `db`)."""
    with Store(db) as store:
        return store.latest_certificates(cluster, nodes, tier)
