"""Provision and drift runs in the records: `recorded_run`, node outcomes, log folder, merge, and the
`records runs` / `records show` commands."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.records import app
from clusterforge.records import RecordsError, Store, outcomes
from clusterforge.records.model import NodeOutcome, RunOutcome
from clusterforge.records.outcomes import recorded_run

PROVISIONED = RunOutcome(
    "failed",
    "apply: 2 hosts, 1 changed, 1 failed; 7 tasks changed",
    (
        NodeOutcome("n1", "changed", 7, 12.5, detail={"rebooted": True, "changed_tasks": ["sysctl"]}),
        NodeOutcome("n2", "failed", 0, 3.0, "tuning : apply sysctls", "permission denied"),
    ),
    "/var/log/cf/provision-x",
)


def test_a_recorded_run_keeps_its_outcome_per_node_and_its_logs(records_dir: Path) -> None:
    with recorded_run("provision", "lab", plan_hash="p" * 64, spec_path="lab.yaml") as rec:
        with Store() as peek:
            assert peek.get_run(rec.run_id).status == "running"
            assert peek.node_holders(["n1", "n2"]) == {}  # no node lock: provision never held one
        rec.finish(PROVISIONED)
    with Store() as store:
        run = store.get_run(rec.run_id)
        assert (run.kind, run.status, run.cluster, run.spec_path) == (
            "provision",
            "failed",
            "lab",
            "lab.yaml",
        )
        assert run.message == PROVISIONED.message and run.log_dir == "/var/log/cf/provision-x"
        assert run.ended_at is not None
        got = store.node_outcomes(rec.run_id)
    assert [(n.node, n.outcome, n.changed, n.failed_task) for n in got] == [
        ("n1", "changed", 7, None),
        ("n2", "failed", 0, "tuning : apply sysctls"),
    ]
    assert (
        got[0].detail == {"rebooted": True, "changed_tasks": ["sysctl"]}
        and got[1].message == "permission denied"
    )


def test_an_interrupted_run_is_incomplete_never_passed(records_dir: Path) -> None:
    with pytest.raises(KeyboardInterrupt), recorded_run("drift", "lab") as rec:
        raise KeyboardInterrupt("signal 15")
    with Store() as store:
        run = store.get_run(rec.run_id)
    assert run.status == "incomplete" and run.message == "did not finish: KeyboardInterrupt: signal 15"


def test_a_block_that_records_no_outcome_leaves_the_run_incomplete(records_dir: Path) -> None:
    with recorded_run("drift", "lab") as rec:
        pass
    with Store() as store:
        assert store.get_run(rec.run_id).status == "incomplete"


def test_a_bad_outcome_records_nothing_of_it(records_dir: Path) -> None:
    bad = RunOutcome("passed", "x", (NodeOutcome("n1", "fine"),))
    with (
        pytest.raises(RecordsError, match="node outcome must be one of"),
        recorded_run("drift", "lab") as rec,
    ):
        rec.finish(bad)
    with Store() as store:
        assert store.get_run(rec.run_id).status == "incomplete"
        assert store.node_outcomes(rec.run_id) == []
    with pytest.raises(RecordsError, match="for provision and drift runs"), recorded_run("certify", "lab"):
        pass


def test_a_long_run_renews_its_lease(records_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outcomes, "DEFAULT_LEASE_S", 0.2)  # a beat every 0.05 s
    with recorded_run("provision", "lab") as rec:
        with Store() as store:
            first = store.get_run(rec.run_id).heartbeat_at
            deadline = time.monotonic() + 10
            while store.get_run(rec.run_id).heartbeat_at == first and time.monotonic() < deadline:
                time.sleep(0.05)
            assert store.get_run(rec.run_id).heartbeat_at != first
        rec.finish(RunOutcome("passed", "ok"))


def test_merge_brings_the_node_outcomes_and_the_logs_folder(tmp_path: Path, records_dir: Path) -> None:
    shard = tmp_path / "shard.db"
    with recorded_run("provision", "lab", db=shard) as rec:
        rec.finish(PROVISIONED)
    with Store() as store:
        report = store.merge_from(shard)
        assert (report.runs, report.run_nodes) == (1, 2)
        assert store.merge_from(shard).run_nodes == 0
        assert store.get_run(rec.run_id).log_dir == PROVISIONED.log_dir
        assert [n.node for n in store.node_outcomes(rec.run_id)] == ["n1", "n2"]


def _runs(records_dir: Path) -> tuple[str, str]:
    with recorded_run("provision", "lab") as p:
        p.finish(PROVISIONED)
    with recorded_run("drift", "other") as d:
        d.finish(
            RunOutcome("passed", "2 nodes, 0 drifted", (NodeOutcome("m1", "ok"), NodeOutcome("m2", "ok")))
        )
    return p.run_id, d.run_id


def test_cli_lists_runs_newest_first_with_node_and_change_counts(records_dir: Path) -> None:
    prov, drift = _runs(records_dir)
    runner = CliRunner()
    res = runner.invoke(app, ["runs"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert drift in lines[0] and "drift" in lines[0] and "2 nodes, 0 changed" in lines[0]
    assert prov in lines[1] and "failed" in lines[1] and "2 nodes, 7 changed" in lines[1]
    res = runner.invoke(app, ["runs", "--kind", "provision", "--format", "json"])
    rows = json.loads(res.output)
    assert [(r["id"], r["nodes"], r["changed"], r["log_dir"]) for r in rows] == [
        (prov, 2, 7, PROVISIONED.log_dir)
    ]
    assert runner.invoke(app, ["runs", "--cluster", "nope"]).output == "no runs recorded\n"
    assert runner.invoke(app, ["runs", "--kind", "deploy"]).exit_code == 2
    assert runner.invoke(app, ["runs", "--format", "yaml"]).exit_code == 2


def test_cli_shows_one_run_by_a_prefix_of_its_id(records_dir: Path) -> None:
    prov, _ = _runs(records_dir)
    runner = CliRunner()
    res = runner.invoke(app, ["show", prov[:8]])
    assert res.exit_code == 0, res.output
    assert f"provision run {prov} of lab: failed" in res.output
    assert "logs /var/log/cf/provision-x" in res.output
    assert "n2" in res.output and "tuning : apply sysctls: permission denied" in res.output
    doc = json.loads(runner.invoke(app, ["show", prov, "--format", "json"]).output)
    assert [n["outcome"] for n in doc["nodes"]] == ["changed", "failed"] and doc["status"] == "failed"
    missing = runner.invoke(app, ["show", "zzz"])
    assert missing.exit_code == 2 and "no run 'zzz'" in missing.output


def test_cli_escapes_control_characters_from_the_database(records_dir: Path) -> None:
    with recorded_run("provision", "lab") as rec:
        rec.finish(
            RunOutcome("failed", "boom \x1b[2J", (NodeOutcome("n1", "failed", message="\x1b]0;x\x07"),))
        )
    out = CliRunner().invoke(app, ["show", rec.run_id]).output + CliRunner().invoke(app, ["runs"]).output
    assert "\x1b" not in out and "\\x1b[2J" in out
