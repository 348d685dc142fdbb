"""Burn-in tables in the records database: whole iterations only, resume bookkeeping, one schema."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clusterforge.burnin.model import Measurement
from clusterforge.records import CURRENT_VERSION, SchemaTooNew, Store
from clusterforge.records.burnin import BurninDB, BurninError


def rows(it: int, n: int = 5) -> list[Measurement]:
    return [
        Measurement("ib_write_bw.loopback", "roce-01", f"rail{r}", value=390.0 + it + r, unit="Gb/s")
        for r in range(n)
    ]


def new(db: BurninDB) -> str:
    return db.create("lab", ["roce-01"], iterations=3, duration_s=None, options={"x": 1}, plan={"nodes": []})


def test_iterations_commit_in_order_and_never_twice(tmp_path: Path) -> None:
    with BurninDB(tmp_path / "r.db") as db:
        bid = new(db)
        assert db.add_session(bid, "session-1") == 1
        db.commit_iteration(bid, 1, "session-1", "t", 1.5, rows(1))
        with pytest.raises(BurninError, match="iteration 1 offered, 2 is next"):
            db.commit_iteration(bid, 1, "session-1", "t", 1.0, rows(1))
        with pytest.raises(BurninError, match="iteration 3 offered, 2 is next"):
            db.commit_iteration(bid, 3, "session-1", "t", 1.0, rows(3))
        db.commit_iteration(bid, 2, "session-1", "t", 2.5, rows(2))
        assert db.next_iteration(bid) == 3 and db.elapsed_s(bid) == 4.0
        assert [i["iteration"] for i in db.iterations(bid)] == [1, 2]
        got = db.measurements(bid)
        assert [(it, m.component, m.value) for it, m in got] == [
            (it, f"rail{r}", 390.0 + it + r) for it in (1, 2) for r in range(5)
        ]
        assert db.add_session(bid, "session-2") == 3
        assert [s["first_iteration"] for s in db.sessions(bid)] == [1, 3]


def test_a_failing_iteration_leaves_nothing(tmp_path: Path) -> None:
    with BurninDB(tmp_path / "r.db") as db:
        bid = new(db)
        broken = [*rows(1), rows(1)[0]]  # the same unit twice: the primary key refuses the 6th row
        with pytest.raises(sqlite3.IntegrityError):
            db.commit_iteration(bid, 1, "s", "t", 1.0, broken)
        assert db.next_iteration(bid) == 1 and db.measurements(bid) == [] and db.iterations(bid) == []


def test_sigkill_inside_the_iteration_transaction_loses_only_that_iteration(tmp_path: Path) -> None:
    """A real process is killed after writing iteration 3's rows but before COMMIT."""
    path = tmp_path / "r.db"
    with BurninDB(path) as db:
        bid = new(db)
        for it in (1, 2):
            db.commit_iteration(bid, it, "s", "t", 1.0, rows(it))
    code = textwrap.dedent(f"""
        import os, signal
        from clusterforge.records.burnin import BurninDB
        from clusterforge.burnin.model import Measurement
        db = BurninDB({str(path)!r})
        class Dying:
            def __init__(self, con):
                self.con = con
            def __getattr__(self, name):
                return getattr(self.con, name)
            def executemany(self, sql, params):
                self.con.executemany(sql, params)  # every row of iteration 3, inside the open transaction
                print("written", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        db._db = Dying(db._db)
        rows = [Measurement("ib_write_bw.loopback", "roce-01", f"rail{{r}}", value=1.0) for r in range(5)]
        db.commit_iteration({bid!r}, 3, "s", "t", 1.0, rows)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == -signal.SIGKILL and "written" in p.stdout, p.stderr
    with BurninDB(path) as db:
        assert db.next_iteration(bid) == 3
        assert sorted({it for it, _ in db.measurements(bid)}) == [1, 2]
        db.commit_iteration(bid, 3, "s2", "t", 1.0, rows(3))  # resume continues at 3
        assert [i["iteration"] for i in db.iterations(bid)] == [1, 2, 3]


def test_burnin_and_records_share_one_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with Store(path) as store:
        run = store.start_run("burnin", "lab", nodes=["roce-01"])
        store.finish_run(run, "passed")
    with BurninDB(path) as db:
        new(db)
        assert db.schema_version == CURRENT_VERSION
    with Store(path) as store:
        assert store.schema_version == CURRENT_VERSION
        assert store.get_run(run).status == "passed"
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "burnin_schema_version" not in tables and "burnin_runs" in tables
    assert con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == CURRENT_VERSION
    con.close()


def test_lookup_by_prefix_finish_and_verdicts(tmp_path: Path) -> None:
    with BurninDB(tmp_path / "r.db") as db:
        bid = new(db)
        assert db.get(bid[:8]).id == bid
        with pytest.raises(BurninError, match="no burn-in run"):
            db.get("nope")
        with pytest.raises(BurninError, match="one of the two"):
            db.create("lab", [], iterations=None, duration_s=None, options={})
        db.set_verdicts(bid, [{"node": "roce-01", "verdict": "fail", "findings": [{"summary": "x"}]}])
        db.finish(bid, "failed", {"n": 1})
        r = db.get(bid)
        assert (r.status, r.summary, r.plan) == ("failed", {"n": 1}, {"nodes": []})
        assert db.verdicts(bid) == {"roce-01": {"verdict": "fail", "findings": [{"summary": "x"}]}}
        assert [x.id for x in db.runs("lab")] == [bid]


def test_a_newer_records_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    BurninDB(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_version VALUES (99, 'x')")
    con.commit()
    con.close()
    with pytest.raises(SchemaTooNew, match="schema version 99"):
        BurninDB(path)
    assert os.path.exists(path)
