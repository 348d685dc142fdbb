"""Schema of the records database: ordered migrations, each bringing the schema up by one version.

A migration is a function of a connection inside the caller's transaction; `MIGRATIONS[i]` takes the
schema from version `i` to `i + 1`. Never edit a released migration: append a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from clusterforge.records.model import SchemaTooNew

KINDS = ("provision", "certify", "drift", "burnin")
RUN_STATUSES = ("running", "passed", "failed", "incomplete", "error")
FINAL_STATUSES = ("passed", "failed", "error")
VERDICTS = ("pass", "fail", "error")
PART_KINDS = ("gpu", "nic")
POOL_ACTIONS = ("drain", "resume", "admit", "hold", "override")
BURNIN_STATUSES = ("running", "passed", "failed", "error")
# provision: ok | changed | failed | unreachable | skipped; drift: ok | drifted | unreachable | error
NODE_OUTCOMES = ("ok", "changed", "failed", "unreachable", "skipped", "drifted", "error")


def _in(values: tuple[str, ...]) -> str:
    return "(" + ",".join(f"'{v}'" for v in values) + ")"


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one: `executescript` would COMMIT the caller's transaction first."""
    stmt = ""
    for line in sql.splitlines(keepends=True):
        stmt += line.split("--", 1)[0] + ("\n" if "--" in line else "")
        if sqlite3.complete_statement(stmt):
            db.execute(stmt)
            stmt = ""
    if stmt.strip():
        raise ValueError(f"incomplete SQL statement in migration: {stmt.strip()[:80]}")


def _v1(db: sqlite3.Connection) -> None:
    """Runs, node results and check results."""
    _script(
        db,
        f"""
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,                 -- UUID, unique across controllers
        kind        TEXT NOT NULL CHECK (kind IN {_in(KINDS)}),
        cluster     TEXT NOT NULL,
        plan_hash   TEXT,
        started_at  TEXT NOT NULL,                    -- ISO 8601 UTC, microseconds
        ended_at    TEXT,
        status      TEXT NOT NULL CHECK (status IN {_in(RUN_STATUSES)}),
        who         TEXT,
        host        TEXT,
        pid         INTEGER,
        pid_start   INTEGER,                          -- /proc/PID/stat starttime, against PID reuse
        argv        TEXT,                             -- JSON list
        spec_path   TEXT,
        tier        TEXT,
        shard       TEXT,
        message     TEXT
    );
    CREATE INDEX runs_by_status ON runs(status);
    CREATE INDEX runs_by_cluster ON runs(cluster, kind, started_at);
    CREATE TABLE node_results (
        run_id      TEXT NOT NULL REFERENCES runs(id),
        node        TEXT NOT NULL,
        verdict     TEXT NOT NULL CHECK (verdict IN {_in(VERDICTS)}),
        duration_s  REAL,
        expectation_digest TEXT,
        recorded_at TEXT NOT NULL,
        PRIMARY KEY (run_id, node)
    );
    CREATE INDEX node_results_by_node ON node_results(node);
    CREATE TABLE check_results (
        id          INTEGER PRIMARY KEY,
        run_id      TEXT NOT NULL REFERENCES runs(id),
        node        TEXT NOT NULL,
        check_id    TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN {_in(VERDICTS)}),
        expected    TEXT,                             -- JSON
        found       TEXT,                             -- JSON
        evidence    TEXT,                             -- JSON
        attempt     INTEGER NOT NULL DEFAULT 1,
        duration_s  REAL,
        message     TEXT,
        fix         TEXT,
        recorded_at TEXT NOT NULL,
        UNIQUE (run_id, node, check_id, attempt)
    );
    CREATE INDEX check_results_by_node ON check_results(node, check_id);
    """,
    )


def _v2(db: sqlite3.Connection) -> None:
    """Run leases, node locks, part serials, certificates and pool events."""
    _script(
        db,
        f"""
    ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
    ALTER TABLE runs ADD COLUMN lease_s REAL;
    CREATE TABLE node_locks (
        node        TEXT PRIMARY KEY,
        run_id      TEXT NOT NULL REFERENCES runs(id),
        acquired_at TEXT NOT NULL
    );
    CREATE TABLE part_sightings (
        run_id      TEXT NOT NULL REFERENCES runs(id),
        node        TEXT NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN {_in(PART_KINDS)}),
        slot        INTEGER NOT NULL,
        serial      TEXT NOT NULL,
        seen_at     TEXT NOT NULL,
        PRIMARY KEY (run_id, node, kind, slot)
    );
    CREATE INDEX part_sightings_by_serial ON part_sightings(serial);
    CREATE INDEX part_sightings_by_node ON part_sightings(node, kind, slot, seen_at);
    CREATE VIEW part_serials AS
        SELECT node, kind, slot, serial,
               MIN(seen_at) AS first_seen, MAX(seen_at) AS last_seen,
               (SELECT p2.run_id FROM part_sightings p2
                 WHERE p2.node = p.node AND p2.kind = p.kind AND p2.slot = p.slot AND p2.serial = p.serial
                 ORDER BY p2.seen_at DESC LIMIT 1) AS run_id,
               COUNT(*) AS sightings
          FROM part_sightings p
         GROUP BY node, kind, slot, serial;
    CREATE TABLE certificates (
        digest      TEXT PRIMARY KEY,
        cluster     TEXT,
        node        TEXT NOT NULL,
        tier        TEXT NOT NULL,
        expectation_digest TEXT NOT NULL,
        verdict     TEXT NOT NULL,
        issued_at   TEXT NOT NULL,
        valid_until TEXT NOT NULL,
        run_id      TEXT,
        path        TEXT,
        body        TEXT NOT NULL,                    -- the certificate JSON, as issued
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX certificates_by_node ON certificates(node, tier, issued_at);
    CREATE TABLE pool_events (
        id          TEXT PRIMARY KEY,                 -- UUID
        node        TEXT NOT NULL,
        at          TEXT NOT NULL,
        action      TEXT NOT NULL CHECK (action IN {_in(POOL_ACTIONS)}),
        reason      TEXT,
        who         TEXT,
        host        TEXT,
        run_id      TEXT
    );
    CREATE INDEX pool_events_by_node ON pool_events(node, at);
    """,
    )


# Burn-in's tables as its own chain made them (`burnin_schema_version` 1): version 3 adopts a file that has
# them and makes them in one that has not, so both end the same.
_BURNIN_TABLES = f"""
    CREATE TABLE burnin_runs (
        id TEXT PRIMARY KEY, cluster TEXT NOT NULL, plan_hash TEXT, spec_path TEXT,
        nodes TEXT NOT NULL, target_iterations INTEGER, duration_s REAL, options TEXT NOT NULL,
        created_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN {_in(BURNIN_STATUSES)}),
        finished_at TEXT, summary TEXT, plan TEXT NOT NULL);
    CREATE TABLE burnin_sessions (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id), run_id TEXT NOT NULL,
        started_at TEXT NOT NULL, first_iteration INTEGER NOT NULL, PRIMARY KEY (burnin_id, run_id));
    CREATE TABLE burnin_iterations (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id),
        iteration INTEGER NOT NULL CHECK (iteration >= 1),
        run_id TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT NOT NULL, duration_s REAL NOT NULL,
        PRIMARY KEY (burnin_id, iteration));
    CREATE TABLE burnin_measurements (
        burnin_id TEXT NOT NULL, iteration INTEGER NOT NULL, test TEXT NOT NULL, node TEXT NOT NULL,
        component TEXT NOT NULL, peer TEXT NOT NULL, value REAL, unit TEXT, error TEXT, detail TEXT,
        PRIMARY KEY (burnin_id, iteration, test, node, component, peer),
        FOREIGN KEY (burnin_id, iteration) REFERENCES burnin_iterations(burnin_id, iteration));
    CREATE INDEX burnin_measurements_by_node ON burnin_measurements(node, test);
    CREATE TABLE burnin_verdicts (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id), node TEXT NOT NULL, verdict TEXT NOT NULL,
        findings TEXT NOT NULL, recorded_at TEXT NOT NULL, PRIMARY KEY (burnin_id, node));
"""
BURNIN_CHAIN_KNOWN = 1  # the last version of burn-in's own chain, which version 3 replaces


def _v3(db: sqlite3.Connection) -> None:
    """Burn-in's tables join this chain. Until now `burnin/db.py` kept them with a chain of its own (table
    `burnin_schema_version`); a file it made keeps its tables and rows and loses that version table."""
    has_chain = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'burnin_schema_version'"
    ).fetchone()
    old = 0
    if has_chain:
        old = int(db.execute("SELECT COALESCE(MAX(version), 0) FROM burnin_schema_version").fetchone()[0])
    if old > BURNIN_CHAIN_KNOWN:
        raise SchemaTooNew(
            f"burn-in tables have schema version {old} (burnin_schema_version), this clusterforge knows up "
            f"to {BURNIN_CHAIN_KNOWN}: upgrade clusterforge"
        )
    if old == 0:
        _script(db, _BURNIN_TABLES)
    if has_chain:
        db.execute("DROP TABLE burnin_schema_version")


def _v4(db: sqlite3.Connection) -> None:
    """What provision and drift runs did or found per node, and where a run's logs are."""
    _script(
        db,
        f"""
    ALTER TABLE runs ADD COLUMN log_dir TEXT;
    CREATE TABLE run_nodes (
        run_id      TEXT NOT NULL REFERENCES runs(id),
        node        TEXT NOT NULL,
        outcome     TEXT NOT NULL CHECK (outcome IN {_in(NODE_OUTCOMES)}),
        changed     INTEGER NOT NULL DEFAULT 0,       -- provision: tasks changed; drift: settings drifted
        duration_s  REAL,
        failed_task TEXT,
        message     TEXT,
        detail      TEXT,                             -- JSON
        recorded_at TEXT NOT NULL,
        PRIMARY KEY (run_id, node)
    );
    CREATE INDEX run_nodes_by_node ON run_nodes(node);
    """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3, _v4]
CURRENT_VERSION = len(MIGRATIONS)
