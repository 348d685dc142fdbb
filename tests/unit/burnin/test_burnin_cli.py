"""CLI parsing and mounting, launcher command lines, records/certificates/pool bridge with fakes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from burnin_data import synthetic
from typer.testing import CliRunner

from clusterforge.burnin import issue
from clusterforge.burnin.execute import Launcher
from clusterforge.burnin.pairs import select_pairs
from clusterforge.burnin.verdicts import evaluate
from clusterforge.cli.burnin import burnin_app, parse_duration
from clusterforge.cli.report import report_app
from clusterforge.flows import burnin as flow
from clusterforge.pool.base import NodeState, PoolManager


def test_parse_duration() -> None:
    assert parse_duration("8h") == 8 * 3600
    assert parse_duration("1h30m") == 5400 and parse_duration("90m") == 5400
    assert parse_duration("45s") == 45 and parse_duration("2d") == 172800 and parse_duration("600") == 600
    for bad in ("", "8x", "h", "1h and more"):
        with pytest.raises(typer.BadParameter):
            parse_duration(bad)


def root() -> typer.Typer:
    """Mounted the way the root CLI mounts it."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """root"""

    app.add_typer(burnin_app, name="burnin")
    app.add_typer(report_app, name="report")
    return app


def test_mounted_help_and_bad_input() -> None:
    runner = CliRunner()
    res = runner.invoke(root(), ["burnin", "--help"])
    assert res.exit_code == 0 and "--iterations" in res.output and "--resume" in res.output
    res = runner.invoke(root(), ["burnin", "inventory/clusters/lab.yaml"])
    assert res.exit_code == 2 and "--duration or --iterations" in res.output
    res = runner.invoke(
        root(), ["burnin", "inventory/clusters/lab.yaml", "--iterations", "2", "--duration", "1h"]
    )
    assert res.exit_code == 2
    res = runner.invoke(root(), ["burnin", "x.yaml", "--iterations", "2", "--launcher", "pbs"])
    assert res.exit_code == 2 and "--launcher" in res.output
    res = runner.invoke(root(), ["report", "burnin", "--help"])
    assert res.exit_code == 0 and "--format" in res.output and "--output" in res.output


def test_launcher_command_lines() -> None:
    cmd = ["all_reduce_perf", "-b", "16G", "-g", "8"]
    slurm = Launcher("slurm", mpi="pmix")
    assert slurm.argv(["ib-01", "ib-02"], cmd) == [
        "srun",
        "-N2",
        "-w",
        "ib-01,ib-02",
        "--ntasks-per-node=1",
        "--mpi=pmix",
        "-Z",
        *cmd,
    ]
    assert "-Z" not in Launcher("slurm", no_allocate=False).argv(["a", "b"], cmd)
    mpi = Launcher("mpirun", hosts={"ib-01": "10.244.0.13", "ib-02": "10.244.0.14"})
    assert mpi.argv(["ib-01", "ib-02"], cmd) == [
        "mpirun",
        "-np",
        "2",
        "--host",
        "10.244.0.13:1,10.244.0.14:1",
        "--map-by",
        "ppr:1:node",
        "-x",
        "NCCL_DEBUG=WARN",
        *cmd,
    ]
    with pytest.raises(ValueError):
        Launcher("pbs").argv(["a"], cmd)


class FakePool(PoolManager):
    name = "fake"

    def __init__(self, states: dict[str, NodeState]) -> None:
        self.states = states
        self.calls: list[tuple[str, str]] = []

    def status(self, nodes: Any = None) -> dict[str, NodeState]:
        return {n: self.states[n] for n in (nodes or self.states)}

    def drain(self, node: str, reason: str, *, force: bool = False) -> bool:
        self.calls.append(("drain", node))
        if self.states[node].state == "drained" and not self.states[node].ours:
            return False
        self.states[node] = NodeState(node, "drained", reason)
        return True

    def resume(self, node: str, *, force: bool = False) -> bool:
        self.calls.append(("resume", node))
        self.states[node] = NodeState(node, "idle")
        return True

    def admit(self, node: str, certificate: Any, *, force: bool = False) -> None:
        raise AssertionError("not used without --admit")


def test_records_certificates_and_pool_actions(lab_plan: dict[str, Any], isolated: Path) -> None:
    from clusterforge.records import Store, verify

    nodes = ["roce-01", "roce-02", "ib-01", "ib-02"]
    rows = synthetic(lab_plan, 3, factors={("roce-01", "nic", "rail3"): 0.7})
    ev = evaluate(rows, lab_plan, nodes, select_pairs(lab_plan))
    mine = issue.in_progress_reason("abcdef0123")
    pool = FakePool(
        {
            "roce-01": NodeState("roce-01", "drained", mine),
            "roce-02": NodeState("roce-02", "drained", mine),
            "ib-01": NodeState("ib-01", "drained", "admin: bad fan"),  # someone else's drain
            "ib-02": NodeState("ib-02", "drained", mine),
        }
    )
    parts = {"roce-01": {"gpu0": "165000", "rail3": "b8ce:f603:0001:0003"}}
    with Store() as store:
        run = store.start_run("burnin", "lab", nodes=nodes)
        issue.record_results(
            store, run, ev, {n["name"]: n["expectation_digest"] for n in lab_plan["nodes"]}, parts
        )
        store.finish_run(run, "failed")
        certs = issue.issue_certificates(store, lab_plan, run, ev, parts)
        actions = flow.pool_actions(pool, store, run, ev, lab_plan, admit=False)
        assert {n: c["verdict"] for n, c in certs.items()} == {
            "roce-01": "fail",
            "roce-02": "pass",
            "ib-01": "pass",
            "ib-02": "pass",
        }
        assert all(verify(c).ok for c in certs.values())
        assert certs["roce-01"]["serials"] == {
            "gpu": [{"index": 0, "serial": "165000"}],
            "nic": [{"index": 3, "serial": "b8ce:f603:0001:0003"}],
        }
        failed = [c for c in certs["roce-01"]["checks"] if c["status"] == "fail"]
        assert [c["id"] for c in failed] == ["burnin.ib_write_bw.loopback"]
        assert store.certificates("roce-02", "burnin")[0]["verdict"] == "pass"
        assert {r.node: r.verdict for r in store.node_results(run)}["roce-01"] == "fail"
        assert store.current_parts("roce-01")[("nic", 3)] == "b8ce:f603:0001:0003"
        assert [e.action for e in store.pool_events("roce-02")] == ["resume"]
    assert actions["roce-01"].startswith("drained: clusterforge: burnin outlier roce-01 rail 3 NIC mlx5_3")
    assert actions["roce-02"] == "resumed" and actions["ib-02"] == "resumed"
    assert actions["ib-01"].startswith("left as it was") and ("resume", "ib-01") not in pool.calls
    assert pool.states["roce-01"].reason.startswith("clusterforge: burnin outlier roce-01")


def test_done_by_iterations_or_by_time_spent_in_iterations(tmp_path: Path) -> None:
    from clusterforge.burnin.runner import Options, done
    from clusterforge.records.burnin import BurninDB

    with BurninDB(tmp_path / "r.db") as db:
        by_count = db.create("lab", ["a"], iterations=2, duration_s=None, options={})
        by_time = db.create("lab", ["a"], iterations=None, duration_s=100.0, options={})
        for bid in (by_count, by_time):
            db.commit_iteration(bid, 1, "s", "t", 60.0, [])
        assert not done(db, by_count, Options(iterations=2))
        assert not done(db, by_time, Options(duration_s=100.0))
        for bid in (by_count, by_time):
            db.commit_iteration(bid, 2, "s", "t", 60.0, [])
        assert done(db, by_count, Options(iterations=2)) and done(db, by_time, Options(duration_s=100.0))


def test_admit_applies_the_admission_policy(lab_plan: dict[str, Any], isolated: Path) -> None:
    """With --admit a passing node is not simply resumed: the pool's policy wants every join tier."""
    from clusterforge.records import Store

    nodes = ["roce-01", "roce-02", "ib-01", "ib-02"]
    ev = evaluate(synthetic(lab_plan, 3), lab_plan, nodes, select_pairs(lab_plan))
    mine = issue.in_progress_reason("abcdef0123")
    pool = FakePool({n: NodeState(n, "drained", mine) for n in nodes})
    with Store() as store:
        run = store.start_run("burnin", "lab", nodes=nodes)
        store.finish_run(run, "passed")
        issue.issue_certificates(store, lab_plan, run, ev, {})
        actions = flow.pool_actions(pool, store, run, ev, lab_plan, admit=True)
    assert lab_plan["certification"]["join_tiers"] == ["quick"]
    assert all("no quick certificate" in a for a in actions.values()), actions
    assert all(s.state == "drained" for s in pool.states.values())
