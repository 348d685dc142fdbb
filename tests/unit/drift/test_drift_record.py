"""A drift check is a drift run of the records: its status as the exit code reads it, each node's outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.flows import drift as drift_run
from clusterforge.records import Store

PLAN: dict[str, Any] = {"cluster": "lab", "plan_hash": "h" * 64, "target": "bare-metal", "nodes": []}


def _report() -> DriftReport:
    rep = DriftReport("lab", "h", ["n1", "n2", "n3", "n4"])
    rep.items += [
        DriftItem("n1", "vm.swappiness", "1", "60", "validator os.sysctl"),
        DriftItem("n1", "vm.max_map_count", "262144", "65530", "validator os.sysctl"),
        DriftItem("n2", "reachability", "reachable over SSH", "unreachable", "ansible"),
    ]
    rep.unreachable.append("n2")
    rep.errors.append("n3: os.thp could not run: timed out")
    return rep


def test_outcome_per_node_and_status() -> None:
    out = _report().outcome()
    assert out.status == "failed"
    assert [(n.node, n.outcome, n.changed) for n in out.nodes] == [
        ("n1", "drifted", 2),
        ("n2", "unreachable", 0),
        ("n3", "error", 0),
        ("n4", "ok", 0),
    ]
    assert [i["setting"] for i in out.nodes[0].detail["items"]] == ["vm.swappiness", "vm.max_map_count"]
    assert out.nodes[2].detail == {"errors": ["n3: os.thp could not run: timed out"]}
    assert out.message == "4 nodes, 1 drifted, 1 unreachable, 1 error; 2 settings drifted; 1 tool errors"


def test_status_reads_like_the_exit_code() -> None:
    only_unreachable = DriftReport("lab", "h", ["n2"])
    only_unreachable.items.append(DriftItem("n2", "reachability", "reachable over SSH", "unreachable", "x"))
    only_unreachable.unreachable.append("n2")
    assert only_unreachable.outcome().status == "failed"
    assert only_unreachable.outcome(allow_unreachable=True).status == "passed"
    tool = DriftReport("lab", "h", ["n1"], errors=["n1: check run failed at 'x': y"])
    assert tool.outcome().status == "error" and tool.outcome().nodes[0].outcome == "error"
    assert DriftReport("lab", "h", ["n1"]).outcome().status == "passed"


def test_drift_recorded_writes_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    seen: dict[str, Any] = {}

    def fake_drift(plan_doc: dict[str, Any], inventory: Path, limit: str | None, **kw: Any) -> DriftReport:
        seen.update(kw, limit=limit)
        return _report()

    monkeypatch.setattr(drift_run, "drift", fake_drift)
    rep = drift_run.drift_recorded(PLAN, tmp_path, "n*", ("lab.yaml", False), shard="1/2")
    assert len(rep.items) == 3 and seen == {
        "limit": "n*",
        "shard": "1/2",
        "extra_vars": None,
        "env": None,
        "console": None,
        "deep": False,
        "scheduler": None,
    }
    with Store() as store:
        (run,) = store.runs(kind="drift")
        assert (run.status, run.shard, run.spec_path, run.plan_hash) == (
            "failed",
            "1/2",
            "lab.yaml",
            "h" * 64,
        )
        assert [n.outcome for n in store.node_outcomes(run.id)] == ["drifted", "unreachable", "error", "ok"]


def test_an_interrupted_drift_run_is_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))

    def interrupted(*a: Any, **kw: Any) -> DriftReport:
        raise KeyboardInterrupt

    monkeypatch.setattr(drift_run, "drift", interrupted)
    with pytest.raises(KeyboardInterrupt):
        drift_run.drift_recorded(PLAN, tmp_path, None, (None, False))
    with Store() as store:
        assert [r.status for r in store.runs(kind="drift")] == ["incomplete"]
