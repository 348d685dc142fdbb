"""Part serials over time: history follows a part through swaps, repeat offenders show up."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusterforge.records import CheckResult, Part, RecordsError, Store

T0 = datetime(2030, 3, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "records.db") as s:
        yield s


def _run(
    s: Store,
    day: int,
    node: str,
    verdict: str,
    gpus: dict[int, str],
    failed: tuple[str, ...] = (),
    status: str | None = None,
) -> str:
    at = T0 + timedelta(days=day)
    rid = s.start_run("certify", "lab", tier="quick", now=at)
    s.add_check_results(
        rid,
        [CheckResult(node=node, check_id=c, status="fail") for c in failed]
        + [CheckResult(node=node, check_id="gpu.count", status="pass")],
        now=at,
    )
    s.add_node_result(rid, node, verdict, now=at)
    s.record_parts(
        rid,
        node,
        [Part("gpu", slot, serial) for slot, serial in gpus.items()] + [Part("nic", 0, f"NIC-{node}")],
        now=at,
    )
    if status != "running":
        s.finish_run(rid, status or ("passed" if verdict == "pass" else "failed"), now=at)
    return rid


def test_part_follows_its_serial_through_a_swap(store: Store) -> None:
    r1 = _run(store, 1, "n1", "fail", {0: "G-BAD", 1: "G-2"}, failed=("gpu.ecc",))
    r2 = _run(store, 2, "n1", "pass", {0: "G-NEW", 1: "G-2"})  # G-BAD swapped out of n1
    r3 = _run(store, 3, "n2", "fail", {3: "G-BAD"}, failed=("gpu.xid", "gpu.ecc"))  # ... into n2
    history = store.serial_history("G-BAD")
    assert [(s.node, s.slot, s.run_id, s.verdict) for s in history] == [
        ("n1", 0, r1, "fail"),
        ("n2", 3, r3, "fail"),
    ]
    assert history[1].failed_checks == ("gpu.ecc", "gpu.xid")
    assert [s.run_id for s in store.serial_failures("G-2")] == [r1]
    swaps = store.node_swaps("n1")
    assert [(w.kind, w.slot, w.old_serial, w.new_serial, w.run_id) for w in swaps] == [
        ("gpu", 0, "G-BAD", "G-NEW", r2)
    ]
    assert store.current_parts("n1") == {("gpu", 0): "G-NEW", ("gpu", 1): "G-2", ("nic", 0): "NIC-n1"}
    offenders = store.repeat_offenders(min_failures=2)
    assert [(o.serial, o.failures, o.nodes) for o in offenders] == [("G-BAD", 2, ("n1", "n2"))]
    assert store.repeat_offenders(min_failures=2, kind="nic") == []
    assert {o.serial for o in store.repeat_offenders(min_failures=1)} == {"G-BAD", "G-2", "NIC-n1", "NIC-n2"}


def test_part_serials_view_has_first_and_last_seen(store: Store) -> None:
    _run(store, 1, "n1", "pass", {0: "G-1"})
    last = _run(store, 5, "n1", "pass", {0: "G-1"})
    db = sqlite3.connect(str(store.path))
    row = db.execute(
        "SELECT serial, first_seen, last_seen, run_id, sightings FROM part_serials "
        "WHERE node = 'n1' AND kind = 'gpu' AND slot = 0"
    ).fetchone()
    assert row[0] == "G-1" and row[1].startswith("2030-03-02") and row[2].startswith("2030-03-06")
    assert row[3:] == (last, 2)


def test_unfinished_runs_do_not_count_in_part_history(store: Store) -> None:
    _run(store, 1, "n1", "fail", {0: "G-X"}, status="running")
    assert store.serial_history("G-X") == [] and store.repeat_offenders(1) == []


def test_record_parts_validates(store: Store) -> None:
    rid = store.start_run("certify", "lab")
    with pytest.raises(RecordsError):
        store.record_parts(rid, "n1", [Part("psu", 0, "P-1")])
    with pytest.raises(RecordsError):
        store.record_parts(rid, "n1", [Part("gpu", 0, "")])
    store.finish_run(rid, "passed")
    with pytest.raises(RecordsError, match="not running"):
        store.record_parts(rid, "n1", [Part("gpu", 0, "G-1")])
