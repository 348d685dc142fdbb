"""Records store: migrations, run lifecycle, incomplete runs, node locks, concurrent writers, merge."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusterforge.records import (
    CURRENT_VERSION,
    CheckResult,
    NodesBusy,
    RecordsError,
    RunStateError,
    SchemaTooNew,
    Store,
)
from clusterforge.records import runs as runs_mod
from clusterforge.records.db import connect, migrate

DIGEST = "ab" * 32
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "records.db") as s:
        yield s


def _raw(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path))
    db.row_factory = sqlite3.Row
    return db


# --- paths and migrations ---------------------------------------------------------------------------


def test_default_path_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "env.db"))
    with Store() as s:
        assert s.path == tmp_path / "env.db"
    monkeypatch.delenv("CLUSTERFORGE_DB")
    monkeypatch.setenv("HOME", str(tmp_path))
    with Store() as s:
        assert s.path == tmp_path / ".local/state/clusterforge/records.db"


def test_fresh_database_is_current_and_wal(store: Store) -> None:
    assert store.schema_version == CURRENT_VERSION == 4
    db = _raw(store.path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [r[0] for r in db.execute("SELECT version FROM schema_version ORDER BY version")]
    assert versions == [1, 2, 3, 4]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {
        "runs",
        "node_results",
        "check_results",
        "node_locks",
        "part_sightings",
        "part_serials",
        "certificates",
        "pool_events",
        "run_nodes",
        "burnin_runs",
        "burnin_sessions",
        "burnin_iterations",
        "burnin_measurements",
        "burnin_verdicts",
    } <= tables


def test_migrates_v1_database_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = connect(path)
    assert migrate(db, target=1) == 1
    db.execute(
        "INSERT INTO runs (id, kind, cluster, started_at, status, host, pid) "
        "VALUES ('r-old', 'certify', 'lab', '2029-12-01T00:00:00.000000+00:00', 'passed', 'h', 1)"
    )
    db.execute(
        "INSERT INTO node_results (run_id, node, verdict, expectation_digest, recorded_at) "
        f"VALUES ('r-old', 'n1', 'pass', '{DIGEST}', '2029-12-01T00:00:01.000000+00:00')"
    )
    db.execute(
        "INSERT INTO runs (id, kind, cluster, started_at, status, host, pid) "
        "VALUES ('r-hung', 'drift', 'lab', '2029-12-01T00:00:00.000000+00:00', 'running', 'elsewhere', 7)"
    )
    db.close()
    with Store(path) as s:
        assert s.schema_version == CURRENT_VERSION
        old = s.get_run("r-old")
        assert (old.status, old.heartbeat_at, old.lease_s) == ("passed", None, None)
        assert s.latest_passing_certification("n1", expectation_digest=DIGEST) is not None
        # a v1 run has no lease columns: its age counts from started_at with the default lease
        assert s.mark_stale_incomplete(now=T0) == ["r-hung"]
        assert s.get_run("r-hung").status == "incomplete"


def test_refuses_database_from_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path).close()
    db = _raw(path)
    db.execute("INSERT INTO schema_version VALUES (99, 'x')")
    db.commit()
    db.close()
    with pytest.raises(SchemaTooNew, match="99"):
        Store(path)


def test_failed_migration_leaves_database_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.records import schema

    def boom(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration bug")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS[:1], boom])
    with pytest.raises(RuntimeError):
        Store(tmp_path / "r.db")
    db = _raw(tmp_path / "r.db")
    assert not db.execute("SELECT name FROM sqlite_master WHERE name IN ('half_done', 'runs')").fetchall()


# --- run lifecycle ---------------------------------------------------------------------------------


def test_run_lifecycle(store: Store) -> None:
    rid = store.start_run(
        "certify",
        "lab",
        plan_hash="p" * 64,
        tier="quick",
        shard="1/2",
        spec_path="inventory/clusters/lab.yaml",
        argv=["clusterforge", "certify"],
    )
    run = store.get_run(rid)
    assert (run.status, run.kind, run.tier, run.shard, run.pid) == (
        "running",
        "certify",
        "quick",
        "1/2",
        os.getpid(),
    )
    assert run.argv == ["clusterforge", "certify"] and run.host and run.who and run.ended_at is None
    store.add_check_result(
        rid,
        CheckResult(
            node="n1",
            check_id="gpu.count",
            status="fail",
            expected=8,
            found=7,
            evidence={"nvidia-smi": "7 GPUs"},
            message="GPU missing",
            fix="reseat GPU 3",
        ),
    )
    store.add_check_result(
        rid, CheckResult(node="n1", check_id="gpu.count", status="pass", expected=8, found=8, attempt=2)
    )
    store.add_node_result(rid, "n1", "pass", duration_s=12.5, expectation_digest=DIGEST)
    results = store.check_results(rid, "n1")
    assert [(r.attempt, r.status, r.found) for r in results] == [(1, "fail", 7), (2, "pass", 8)]
    assert results[0].evidence == {"nvidia-smi": "7 GPUs"} and results[0].fix == "reseat GPU 3"
    assert store.failed_checks(rid, "n1") == []  # the last attempt passed
    store.finish_run(rid, "passed")
    done = store.get_run(rid)
    assert done.status == "passed" and done.ended_at is not None
    with pytest.raises(RunStateError, match="not running"):
        store.finish_run(rid, "failed")
    with pytest.raises(RunStateError):
        store.add_node_result(rid, "n2", "pass")


@pytest.mark.parametrize("bad", [{"kind": "deploy"}, {"status": "running"}, {"status": "passed?"}])
def test_rejects_unknown_kinds_and_statuses(store: Store, bad: dict[str, str]) -> None:
    with pytest.raises(RecordsError):
        if "kind" in bad:
            store.start_run(bad["kind"], "lab")
        else:
            store.finish_run(store.start_run("drift", "lab"), bad["status"])


def test_verdicts_are_checked(store: Store) -> None:
    rid = store.start_run("certify", "lab")
    with pytest.raises(RecordsError):
        store.add_node_result(rid, "n1", "ok")
    with pytest.raises(RecordsError):
        store.add_check_result(rid, CheckResult(node="n1", check_id="x", status="skipped"))


def test_unfinished_runs_never_read_as_passed(store: Store) -> None:
    running = store.start_run("certify", "lab", tier="quick")
    store.add_node_result(running, "n1", "pass", expectation_digest=DIGEST)
    assert store.latest_passing_certification("n1") is None  # still running
    assert store.node_history("n1") == []
    errored = store.start_run("certify", "lab", tier="quick")
    store.add_node_result(errored, "n1", "pass", expectation_digest=DIGEST)
    store.finish_run(errored, "error", "dcgmi hung")
    assert store.latest_passing_certification("n1") is None
    failed_run = store.start_run("certify", "lab", tier="quick")
    store.add_node_result(failed_run, "n1", "pass", expectation_digest=DIGEST)
    store.add_node_result(failed_run, "n2", "fail", expectation_digest=DIGEST)
    store.finish_run(failed_run, "failed")
    latest = store.latest_passing_certification("n1", tier="quick", expectation_digest=DIGEST)
    assert latest is not None and latest.run_id == failed_run  # n1 passed in a run that finished
    assert store.latest_passing_certification("n1", expectation_digest="cd" * 32) is None
    assert store.latest_passing_certification("n2") is None


_CHILD = textwrap.dedent("""
    import sys, time
    from clusterforge.records import Store
    s = Store(sys.argv[1])
    rid = s.start_run("certify", "lab", tier="quick", nodes=["n1", "n2"])
    s.add_node_result(rid, "n1", "pass", expectation_digest="ab" * 32)
    print(rid, flush=True)
    time.sleep(120)
""")


def test_killed_run_becomes_incomplete_and_its_nodes_are_reclaimed(store: Store) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store.path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        rid = child.stdout.readline().strip()
        assert store.get_run(rid).status == "running"
        with pytest.raises(NodesBusy) as busy:
            store.start_run("certify", "lab", nodes=["n2", "n3"])
        assert rid in str(busy.value) and f"pid {child.pid}" in str(busy.value)
        assert set(busy.value.holders) == {"n2"}
        assert store.mark_stale_incomplete() == []  # alive: left alone
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # the dead holder is reclaimed when another run asks for its nodes
    second = store.start_run("certify", "lab", nodes=["n2"])
    run = store.get_run(rid)
    assert run.status == "incomplete" and "is gone" in (run.message or "")
    assert store.latest_passing_certification("n1") is None
    assert store.node_holders(["n1", "n2"]) == {"n2": store.get_run(second)}


def test_pid_reuse_does_not_keep_a_dead_run_alive(store: Store) -> None:
    rid = store.start_run("burnin", "lab")
    db = _raw(store.path)
    db.execute("UPDATE runs SET pid_start = pid_start + 1 WHERE id = ?", (rid,))  # same pid, other process
    db.commit()
    assert store.mark_stale_incomplete() == [rid]


def test_lease_expires_for_runs_of_other_hosts(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs_mod, "hostname", lambda: "controller-b")
    rid = store.start_run("certify", "lab", lease_s=600, now=T0, nodes=["n1"])
    monkeypatch.setattr(runs_mod, "hostname", lambda: "controller-a")
    assert store.mark_stale_incomplete(now=T0 + timedelta(seconds=500)) == []
    store.heartbeat(rid, now=T0 + timedelta(seconds=500))
    assert store.mark_stale_incomplete(now=T0 + timedelta(seconds=1000)) == []
    assert store.mark_stale_incomplete(now=T0 + timedelta(seconds=1200)) == [rid]
    assert store.get_run(rid).status == "incomplete"
    assert store.node_holders(["n1"]) == {}
    with pytest.raises(RunStateError):
        store.heartbeat(rid)
    with pytest.raises(RunStateError, match="incomplete"):
        store.finish_run(rid, "passed")  # a reclaimed run cannot turn into a pass afterwards


def test_lock_conflicts_and_release(store: Store) -> None:
    a = store.start_run("provision", "lab", nodes=["n1", "n2"])
    with pytest.raises(NodesBusy, match="n2 held by provision run"):
        store.start_run("certify", "lab", nodes=["n2", "n3"])
    assert [r.id for r in store.runs(status="running")] == [a]  # the refused run was not recorded
    b = store.start_run("certify", "lab", nodes=["n3"])
    with pytest.raises(NodesBusy):
        store.acquire_nodes(b, ["n1"])
    store.acquire_nodes(a, ["n1"])  # re-acquiring its own node is fine
    store.release_nodes(a, ["n2"])
    store.acquire_nodes(b, ["n2"])
    store.finish_run(a, "passed")
    store.acquire_nodes(b, ["n1"])
    assert set(store.node_holders(["n1", "n2", "n3"])) == {"n1", "n2", "n3"}
    store.finish_run(b, "failed")
    assert store.node_holders(["n1", "n2", "n3"]) == {}


_WRITER = textwrap.dedent("""
    import sys
    from clusterforge.records import Store, CheckResult
    s = Store(sys.argv[1], timeout_s=60)
    for i in range(int(sys.argv[3])):
        rid = s.start_run("certify", "lab", shard=sys.argv[2])
        checks = [CheckResult(node=f"n{i}", check_id=f"c{j}", status="pass") for j in range(5)]
        s.add_check_results(rid, checks)
        s.add_node_result(rid, f"n{i}", "pass")
        s.finish_run(rid, "passed")
""")


def test_concurrent_writers_from_two_processes(store: Store) -> None:
    n = 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(store.path), shard, str(n)], stderr=subprocess.PIPE, text=True
        )
        for shard in ("a", "b")
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    runs = store.runs(limit=1000)
    assert len(runs) == 2 * n and {r.status for r in runs} == {"passed"}
    db = _raw(store.path)
    assert db.execute("SELECT COUNT(*) FROM check_results").fetchone()[0] == 2 * n * 5
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --- merge -----------------------------------------------------------------------------------------


def _certify(s: Store, node: str, verdict: str, serial: str) -> str:
    from clusterforge.records import Part

    rid = s.start_run("certify", "lab", tier="quick")
    s.add_check_result(
        rid, CheckResult(node=node, check_id="gpu.ecc", status=verdict if verdict != "pass" else "pass")
    )
    s.add_node_result(rid, node, verdict, expectation_digest=DIGEST)
    s.record_parts(rid, node, [Part("gpu", 0, serial)])
    s.finish_run(rid, "passed" if verdict == "pass" else "failed")
    return rid


def test_merge_imports_without_duplicates(tmp_path: Path, store: Store) -> None:
    local = _certify(store, "n1", "pass", "G-1")
    with Store(tmp_path / "shard.db") as other:
        remote = _certify(other, "n2", "fail", "G-2")
        other.record_pool_event("n2", "drain", "clusterforge: failed gpu.ecc")
        hung = other.start_run("certify", "lab")
    report = store.merge_from(tmp_path / "shard.db")
    assert (
        report.runs,
        report.node_results,
        report.check_results,
        report.part_sightings,
        report.pool_events,
    ) == (2, 1, 1, 1, 1)
    again = store.merge_from(tmp_path / "shard.db")
    assert again.runs == again.node_results == again.check_results == again.part_sightings == 0
    assert {r.id for r in store.runs()} == {local, remote, hung}
    assert store.get_run(remote).status == "failed"
    assert [e.action for e in store.pool_events("n2")] == ["drain"]
    assert store.failed_checks(remote, "n2") == ["gpu.ecc"]
    with pytest.raises(RecordsError):
        store.merge_from(store.path)
    with pytest.raises(RecordsError):
        store.merge_from(tmp_path / "missing.db")


def test_merge_takes_the_final_status_of_a_run_both_sides_know(tmp_path: Path, store: Store) -> None:
    rid = store.start_run("certify", "lab", nodes=["n1"])
    shard = tmp_path / "copy.db"
    with Store(shard) as other:
        other.merge_from(store.path)  # the other controller saw it running, then finished it
        other.finish_run(rid, "passed")
    report = store.merge_from(shard)
    assert report.runs == 0 and report.runs_updated == 1
    assert store.get_run(rid).status == "passed" and store.node_holders(["n1"]) == {}


def test_merge_brings_an_old_database_to_the_current_schema(tmp_path: Path, store: Store) -> None:
    old = tmp_path / "v1.db"
    db = connect(old)
    migrate(db, target=1)
    db.execute(
        "INSERT INTO runs (id, kind, cluster, started_at, ended_at, status, argv) VALUES "
        "('u-1', 'drift', 'lab', '2029-01-01T00:00:00.000000+00:00', '2029-01-01T00:01:00.000000+00:00',"
        f" 'failed', '{json.dumps(['clusterforge', 'drift'])}')"
    )
    db.close()
    assert store.merge_from(old).runs == 1
    assert store.get_run("u-1").argv == ["clusterforge", "drift"]


def test_merge_brings_burnins_whole_and_their_final_status(tmp_path: Path, store: Store) -> None:
    """A burn-in run on another controller (`--shard`) arrives with its sessions, iterations, measurements
    and verdicts; a burn-in both sides know takes the final status; merging again adds nothing."""
    from clusterforge.records.burnin import BurninDB
    from clusterforge.records.model import Measurement

    shard = tmp_path / "shard.db"
    with BurninDB(shard) as b:
        bid = b.create("lab", ["n1", "n2"], iterations=1, duration_s=None, options={"shard": "1/2"})
        b.add_session(bid, "run-1")
        ms = [
            Measurement("nvbandwidth", n, "gpu0", "", 310.5 + i, "GB/s") for i, n in enumerate(["n1", "n2"])
        ]
        b.commit_iteration(bid, 1, "run-1", "2026-11-26T10:00:00+00:00", 42.0, ms)
        b.set_verdicts(bid, [{"node": "n1", "verdict": "pass", "findings": []}])
        shared = b.create("lab", ["n3"], iterations=1, duration_s=None, options={})
    with BurninDB(store.path) as mine:
        mine._db.execute("ATTACH DATABASE ? AS o", (str(shard),))
        mine._db.execute("INSERT INTO burnin_runs SELECT * FROM o.burnin_runs WHERE id = ?", (shared,))
        mine._db.commit()
        mine._db.execute("DETACH DATABASE o")
    with BurninDB(shard) as b:
        b.finish(shared, "passed", {"nodes": 1})
    report = store.merge_from(shard)
    assert (report.burnin_runs, report.burnin_runs_updated, report.burnin_sessions) == (1, 1, 1)
    assert (report.burnin_iterations, report.burnin_measurements, report.burnin_verdicts) == (1, 2, 1)
    with BurninDB(store.path) as mine:
        assert [m.value for _, m in mine.measurements(bid)] == [310.5, 311.5]
        assert mine.verdicts(bid) == {"n1": {"verdict": "pass", "findings": []}}
        assert mine.get(shared).status == "passed" and mine.get(bid).options == {"shard": "1/2"}
    again = store.merge_from(shard)
    assert again.burnin_runs == again.burnin_measurements == again.burnin_runs_updated == 0
