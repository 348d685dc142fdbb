"""A provision is a provision run of the records (no JSON run files): hosts, changes, outcome, logs folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.records import Store
from clusterforge.run import provision as provision_mod
from clusterforge.run.provision import HostRecord, Options, ProvisionReport

PLAN: dict[str, Any] = {"cluster": "lab", "plan_hash": "p" * 64, "nodes": []}


def _report(run_id: str = "r1", **kw: Any) -> ProvisionReport:
    rep = ProvisionReport(run_id, "lab", "p" * 64, False, 0.0, logs="/logs/provision-r1", **kw)
    rep.hosts = {
        "n1": HostRecord("n1", "changed", 4, duration=10.04, rebooted=True, changed_tasks=["a", "b"]),
        "n2": HostRecord("n2", "ok", 0, duration=2.0),
    }
    return rep


def test_outcome_of_a_good_run() -> None:
    out = _report().outcome()
    assert (out.status, out.log_dir) == ("passed", "/logs/provision-r1")
    assert out.message == "apply: 2 hosts, 1 changed, 1 ok; 4 tasks changed"
    n1 = out.nodes[0]
    assert (n1.node, n1.outcome, n1.changed, n1.duration_s) == ("n1", "changed", 4, 10.04)
    assert n1.detail == {
        "pending_reboot": [],
        "rebooted": True,
        "drained": False,
        "changed_tasks": ["a", "b"],
    }


def test_outcome_of_failed_aborted_and_tool_failed_runs() -> None:
    rep = _report(aborted="2 of 4 hosts failed")
    rep.hosts["n2"] = HostRecord("n2", "unreachable", failed_task="reboot", message="did not come back")
    out = rep.outcome()
    assert out.status == "failed" and out.message.endswith("; aborted: 2 of 4 hosts failed")
    assert (out.nodes[1].outcome, out.nodes[1].failed_task) == ("unreachable", "reboot")
    tool = _report(tool_error="ansible-playbook site.yml rc 4")
    assert tool.outcome().status == "error"
    assert ProvisionReport("r", "lab", "p", True, 0.0).outcome().message.startswith("check: 0 hosts")


def test_provision_recorded_names_the_run_and_its_logs_by_the_records_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))

    def fake_provision(
        plan_doc: Any, inv: Path, opts: Options, pool: Any, console: Any, env: Any, run_id: str
    ) -> Any:
        return _report(run_id)

    monkeypatch.setattr(provision_mod, "provision", fake_provision)
    rep = provision_mod.provision_recorded(PLAN, tmp_path, Options(), None, None, "lab.yaml")
    with Store() as store:
        (run,) = store.runs(kind="provision")
        assert run.id == rep.run_id and run.status == "passed" and run.log_dir == "/logs/provision-r1"
        assert [(n.node, n.changed) for n in store.node_outcomes(run.id)] == [("n1", 4), ("n2", 0)]


def test_a_check_mode_provision_is_recorded_as_tier_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setattr(provision_mod, "provision", lambda *a, run_id: _report(run_id))
    provision_mod.provision_recorded(PLAN, tmp_path, Options(check=True), None)
    provision_mod.provision_recorded(PLAN, tmp_path, Options(), None)
    with Store() as store:
        assert [r.tier for r in store.runs(kind="provision")] == [None, "check"]


def test_applied_state_is_read_only_on_converged_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.remote.node_state import StateRead
    from clusterforge.run.managed import Managed

    asked: dict[str, Any] = {}
    state = {"files": {"/etc/x": None}, "packages": {}, "services": {}, "modules": {}, "errors": []}

    def fake_reads(plan_doc: Any, inventory: Any, names: dict[str, Any]) -> dict[str, StateRead]:
        asked.update(names)
        return {
            n: StateRead(n, state) if n == "n1" else StateRead(n, None, "unreachable: gone") for n in names
        }

    monkeypatch.setattr(provision_mod, "read_states", fake_reads)
    files = Managed(files={"/etc/x"})
    rep = ProvisionReport("r1", "lab", "p" * 64, False, 0.0)
    rep.hosts = {
        "n1": HostRecord("n1", "changed", 2, managed=files),
        "n2": HostRecord("n2", "ok", managed=files),
        "n3": HostRecord("n3", "failed", managed=files),  # did not converge
        "n4": HostRecord("n4", "ok", managed=files, pending_reboot=["kernel cmdline"]),  # --no-reboot
        "n5": HostRecord("n5", "ok"),  # nothing managed was reported
    }
    plan = {"cluster": "lab", "plan_hash": "p" * 64, "nodes": [{"name": "n1", "desired": {"thp": "never"}}]}
    provision_mod.record_applied(rep, plan, Path("inv"))
    assert set(asked) == {"n1", "n2"} and asked["n1"]["files"] == ["/etc/x"]
    applied = rep.hosts["n1"].applied
    assert applied is not None and applied["state"]["files"] == {"/etc/x": None}
    assert applied["plan_hash"] == "p" * 64 and applied["desired"] == {"thp": "never"}
    assert rep.hosts["n2"].applied is None and rep.hosts["n2"].applied_error == "unreachable: gone"
    nodes = {n.node: n for n in rep.outcome().nodes}
    assert "applied" in nodes["n1"].detail and nodes["n2"].detail["applied_error"] == "unreachable: gone"
    assert "applied" not in nodes["n3"].detail
