"""Version 3 of the records schema adopts the burn-in tables that burn-in's own migration chain made.

The old chain is rebuilt here from its SQL as `burnin/db.py` had it (burnin_schema_version 1), so these tests
open files exactly like the ones the old code left on controllers.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clusterforge.records import CURRENT_VERSION, SchemaTooNew, Store
from clusterforge.records.burnin import BurninDB
from clusterforge.records.db import connect, migrate
from clusterforge.records.model import Measurement

# burnin/db.py's `_v1` and `migrate`, verbatim, before the tables joined the records chain
OLD_BURNIN_V1 = (
    """CREATE TABLE burnin_runs (
        id TEXT PRIMARY KEY, cluster TEXT NOT NULL, plan_hash TEXT, spec_path TEXT,
        nodes TEXT NOT NULL, target_iterations INTEGER, duration_s REAL, options TEXT NOT NULL,
        created_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running','passed','failed','error')),
        finished_at TEXT, summary TEXT, plan TEXT NOT NULL)""",
    """CREATE TABLE burnin_sessions (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id), run_id TEXT NOT NULL,
        started_at TEXT NOT NULL, first_iteration INTEGER NOT NULL, PRIMARY KEY (burnin_id, run_id))""",
    """CREATE TABLE burnin_iterations (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id),
        iteration INTEGER NOT NULL CHECK (iteration >= 1),
        run_id TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT NOT NULL, duration_s REAL NOT NULL,
        PRIMARY KEY (burnin_id, iteration))""",
    """CREATE TABLE burnin_measurements (
        burnin_id TEXT NOT NULL, iteration INTEGER NOT NULL, test TEXT NOT NULL, node TEXT NOT NULL,
        component TEXT NOT NULL, peer TEXT NOT NULL, value REAL, unit TEXT, error TEXT, detail TEXT,
        PRIMARY KEY (burnin_id, iteration, test, node, component, peer),
        FOREIGN KEY (burnin_id, iteration) REFERENCES burnin_iterations(burnin_id, iteration))""",
    "CREATE INDEX burnin_measurements_by_node ON burnin_measurements(node, test)",
    """CREATE TABLE burnin_verdicts (
        burnin_id TEXT NOT NULL REFERENCES burnin_runs(id), node TEXT NOT NULL, verdict TEXT NOT NULL,
        findings TEXT NOT NULL, recorded_at TEXT NOT NULL, PRIMARY KEY (burnin_id, node))""",
)
T = "2030-01-01T00:00:00.000000+00:00"


def old_burnin_db(path: Path, records_version: int, burnin_version: int = 1) -> None:
    """A file as the old code left it: the records schema at `records_version` (0: burn-in opened the file
    first), burn-in's chain at `burnin_version` with one burn-in of two iterations."""
    db = connect(path)
    if records_version:
        migrate(db, target=records_version)
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "CREATE TABLE IF NOT EXISTS burnin_schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)"
    )
    for stmt in OLD_BURNIN_V1:
        db.execute(stmt)
    for v in range(1, burnin_version + 1):
        db.execute("INSERT INTO burnin_schema_version VALUES (?, ?)", (v, T))
    db.execute(
        "INSERT INTO burnin_runs (id, cluster, nodes, target_iterations, options, created_at, status, plan)"
        " VALUES ('b-old', 'lab', '[\"roce-01\"]', 3, '{}', ?, 'running', '{\"nodes\": []}')",
        (T,),
    )
    db.execute("INSERT INTO burnin_sessions VALUES ('b-old', 'b-old', ?, 1)", (T,))
    for it in (1, 2):
        db.execute("INSERT INTO burnin_iterations VALUES ('b-old', ?, 'b-old', ?, ?, 1.5)", (it, T, T))
        db.execute(
            "INSERT INTO burnin_measurements VALUES ('b-old', ?, 'ib_write_bw.loopback', 'roce-01', 'rail0',"
            " '', ?, 'Gb/s', NULL, NULL)",
            (it, 390.0 + it),
        )
    db.execute("INSERT INTO burnin_verdicts VALUES ('b-old', 'roce-01', 'pass', '[]', ?)", (T,))
    db.execute("COMMIT")
    db.close()


def columns(path: Path) -> dict[str, list[tuple[object, ...]]]:
    con = sqlite3.connect(path)
    names = [
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'burnin%' ORDER BY name")
    ]
    out = {n: [tuple(r) for r in con.execute(f"PRAGMA table_info({n})")] for n in names}
    con.close()
    return out


@pytest.mark.parametrize("records_version", [0, 2])
def test_a_burnin_database_of_the_old_chain_migrates_with_its_rows(
    tmp_path: Path, records_version: int
) -> None:
    path = tmp_path / "old.db"
    old_burnin_db(path, records_version)
    with BurninDB(path) as db:
        assert db.schema_version == CURRENT_VERSION
        run = db.get("b-old")
        assert (run.status, run.nodes, run.target_iterations) == ("running", ["roce-01"], 3)
        assert [(it, m.value) for it, m in db.measurements("b-old")] == [(1, 391.0), (2, 392.0)]
        assert db.verdicts("b-old") == {"roce-01": {"verdict": "pass", "findings": []}}
        assert db.next_iteration("b-old") == 3  # a resume continues where the old code stopped
        db.commit_iteration(
            "b-old", 3, "s2", T, 1.0, [Measurement("ib_write_bw.loopback", "roce-01", "rail0")]
        )
    con = sqlite3.connect(path)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    versions = [r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY version")]
    con.close()
    assert "burnin_schema_version" not in names  # one migration chain left
    assert versions == list(range(1, CURRENT_VERSION + 1))
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()
    assert columns(path) == columns(fresh)  # the adopted tables are the ones a new file gets


def test_a_burnin_chain_newer_than_this_code_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    old_burnin_db(path, 2, burnin_version=2)
    with pytest.raises(SchemaTooNew, match="burn-in tables have schema version 2"):
        Store(path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 2
    assert con.execute("SELECT MAX(version) FROM burnin_schema_version").fetchone()[0] == 2
    con.close()


def test_a_version_2_file_without_burnin_gets_the_tables(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    db = connect(path)
    migrate(db, target=2)
    db.close()
    with BurninDB(path) as bdb:
        bid = bdb.create("lab", ["roce-01"], iterations=1, duration_s=None, options={})
        assert bdb.get(bid).status == "running"
        assert bdb.schema_version == CURRENT_VERSION
