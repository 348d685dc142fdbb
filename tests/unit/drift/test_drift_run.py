"""`flows.drift._check_and_validate`: the check run and the quick validators side by side, merged per node."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from clusterforge.certify.results import CheckResult
from clusterforge.drift.model import DriftReport
from clusterforge.flows import drift as drift_run

PLAN: dict[str, Any] = {"cluster": "lab", "plan_hash": "h", "target": "bare-metal", "nodes": []}


def _report() -> DriftReport:
    return DriftReport("lab", "h", ["n1", "n2"])


def test_validators_run_while_the_check_run_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    started, seen_during_check = threading.Event(), []

    def fake_checks(*args: Any, **kw: Any) -> dict[str, list[CheckResult]]:
        started.set()
        return {
            "n1": [
                CheckResult("n1", "os.governor", "fail", expected="performance", found="powersave", fix="x")
            ],
            "n2": [CheckResult("n2", "ssh.reachable", "error", message="no route")],
        }

    def fake_ansible(report: DriftReport, *args: Any) -> None:
        seen_during_check.append(started.wait(5))  # validators started before the check run ended
        report.unreachable.append("n2")

    monkeypatch.setattr(drift_run, "run_checks", fake_checks)
    monkeypatch.setattr(drift_run, "ansible_drift", fake_ansible)
    rep = _report()
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1", "n2"], ["n1", "n2"], {}, 2, validators=True)
    assert seen_during_check == [True]
    assert [(i.node, i.setting, i.expected, i.actual) for i in rep.items] == [
        ("n1", "os.governor", "performance", "powersave")
    ]
    # n2 is reported once, as unreachable (by the caller), not again as a validator that could not run
    assert rep.errors == []


def test_a_check_that_could_not_run_on_a_reachable_node_is_a_tool_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        drift_run,
        "run_checks",
        lambda *a, **kw: {"n1": [CheckResult("n1", "gpu.count", "error", message="nvidia-smi timed out")]},
    )
    monkeypatch.setattr(drift_run, "ansible_drift", lambda report, *a: None)
    rep = _report()
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1"], ["n1"], {}, 2, validators=True)
    assert rep.items == [] and rep.errors == ["n1: gpu.count could not run: nvidia-smi timed out"]


def test_interrupted_check_run_cancels_the_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    cancelled = []

    def fake_checks(*args: Any, **kw: Any) -> dict[str, list[CheckResult]]:
        cancel = args[-1]
        cancelled.append(cancel.wait(5))
        return {}

    def interrupted(*a: Any) -> None:
        raise KeyboardInterrupt("signal 15")

    monkeypatch.setattr(drift_run, "run_checks", fake_checks)
    monkeypatch.setattr(drift_run, "ansible_drift", interrupted)
    with pytest.raises(KeyboardInterrupt):
        drift_run._check_and_validate(_report(), PLAN, Path("inv"), ["n1"], ["n1"], {}, 2, validators=True)
    assert cancelled == [True]


def test_no_validators_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **kw: Any) -> None:
        raise AssertionError("validators must not run")

    monkeypatch.setattr(drift_run, "run_checks", boom)
    monkeypatch.setattr(drift_run, "ansible_drift", lambda report, *a: None)
    rep = _report()
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1"], ["n1"], {}, 2, validators=False)
    assert rep.items == [] and rep.errors == []


# --- the fast path: applied state read, the check run only where needed -------------------------------

STATE: dict[str, Any] = {
    "files": {"/etc/x.conf": {"sha256": "a" * 64, "mode": "0644", "owner": "root", "group": "root"}},
    "packages": {},
    "services": {},
    "modules": {},
}


def _fast_setup(
    monkeypatch: pytest.MonkeyPatch, live: dict[str, Any], applied: dict[str, Any]
) -> tuple[list[list[str]], dict[str, Any]]:
    """drift() over n1..n3 with stand-ins; the host lists each check run was given, and the plan."""
    from clusterforge import __version__
    from clusterforge.plan.digest import sha256_of
    from clusterforge.remote.node_state import StateRead

    ran: list[list[str]] = []
    rec = {
        "plan_hash": "h",
        "desired_sha256": sha256_of({}),
        "desired": {},
        "version": __version__,
        "inputs_sha256": "roles+inventory",
    }
    plan = {**PLAN, "nodes": [{"name": n, "desired": {}} for n in ("n1", "n2", "n3")]}
    monkeypatch.setattr(drift_run, "inputs_digest", lambda inventory: "roles+inventory")
    monkeypatch.setattr(drift_run, "resolve_hosts", lambda inv, limit: ["n1", "n2", "n3"])
    monkeypatch.setattr(drift_run, "plan_order", lambda hosts, doc: hosts)
    monkeypatch.setattr(
        drift_run,
        "_latest_applied",
        lambda c, hosts: {h: ({**rec, **applied[h]} if h in applied else None) for h in hosts},
    )
    monkeypatch.setattr(drift_run, "run_checks", lambda *a, **kw: {})
    monkeypatch.setattr(drift_run, "certificate_drift", lambda *a: None)

    def fake_ansible(report: DriftReport, inventory: Path, hosts: list[str], *a: Any) -> None:
        ran.append(list(hosts))

    def fake_reads(plan_doc: Any, inventory: Any, names: dict[str, Any]) -> dict[str, StateRead]:
        return {h: live[h] if isinstance(live[h], StateRead) else StateRead(h, live[h]) for h in names}

    monkeypatch.setattr(drift_run, "ansible_drift", fake_ansible)
    monkeypatch.setattr(drift_run, "read_states", fake_reads)
    return ran, plan


def test_unchanged_nodes_need_no_check_run(monkeypatch: pytest.MonkeyPatch) -> None:
    ran, plan = _fast_setup(
        monkeypatch, {"n1": STATE, "n2": STATE}, {"n1": {"state": STATE}, "n2": {"state": STATE}}
    )
    rep = drift_run.drift(plan, Path("inv"))
    assert ran == [["n3"]]  # n3: no applied state on record
    assert rep.items == [] and set(rep.deep) == {"n3"} and "no applied state" in rep.deep["n3"]


def test_a_changed_node_is_named_and_explained_by_the_check_run(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = {**STATE, "files": {"/etc/x.conf": {**STATE["files"]["/etc/x.conf"], "sha256": "b" * 64}}}
    ran, plan = _fast_setup(
        monkeypatch,
        {"n1": changed, "n2": STATE, "n3": STATE},
        {h: {"state": STATE} for h in ("n1", "n2", "n3")},
    )
    rep = drift_run.drift(plan, Path("inv"))
    assert ran == [["n1"]]
    assert [(i.node, i.setting) for i in rep.items] == [("n1", "file /etc/x.conf")]
    assert set(rep.deep) == {"n1"}


def test_other_roles_or_inventory_need_the_check_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """An applied state made by other roles (or with another inventory) says nothing of what these roles
    would do: the node is checked by the check run, and so is one whose record names no digest."""
    ran, plan = _fast_setup(
        monkeypatch,
        {"n1": STATE, "n2": STATE, "n3": STATE},
        {"n1": {"state": STATE}, "n2": {"state": STATE, "inputs_sha256": "older"}, "n3": {"state": STATE}},
    )
    rep = drift_run.drift(plan, Path("inv"))
    assert ran == [["n2"]] and set(rep.deep) == {"n2"}
    assert "other roles or another inventory" in rep.deep["n2"]
    assert rep.compared == ["n1", "n3"]


def test_deep_checks_every_node_and_reads_no_applied_state(monkeypatch: pytest.MonkeyPatch) -> None:
    ran, plan = _fast_setup(monkeypatch, {}, {h: {"state": STATE} for h in ("n1", "n2", "n3")})
    rep = drift_run.drift(plan, Path("inv"), deep=True)
    assert ran == [["n1", "n2", "n3"]] and rep.deep == dict.fromkeys(["n1", "n2", "n3"], "--deep")


def test_an_unreadable_node_is_unreachable_or_an_error_never_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.remote.node_state import StateRead

    live = {
        "n1": StateRead("n1", None, "unreachable: no route"),
        "n2": StateRead("n2", None, "state read exit 1: x"),
        "n3": STATE,
    }
    _, plan = _fast_setup(monkeypatch, live, {h: {"state": STATE} for h in ("n1", "n2", "n3")})
    rep = drift_run.drift(plan, Path("inv"))
    assert rep.unreachable == ["n1"] and [(i.node, i.setting) for i in rep.items] == [("n1", "reachability")]
    assert rep.errors == ["n2: applied-state read failed: state read exit 1: x"]
    assert rep.outcome().status == "failed"


class _Slurm:
    """A Slurm pool manager stand-in: n3 is down (no slurmd to start a task)."""

    name = "slurm"

    def status(self, nodes: list[str]) -> dict[str, Any]:
        from clusterforge.pool.base import NodeState

        return {n: NodeState(n, "down" if n == "n3" else "idle") for n in nodes}


def test_via_slurm_the_step_reads_its_nodes_and_ssh_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """The step brings back the validators and the applied state of the nodes Slurm can run (n1, n2); the
    down node is read over SSH; a changed file found by the step and a failed check are drift as over SSH,
    and a node the step did not answer for is an error, never clean."""
    from clusterforge.certify.node_job import StepAnswer
    from clusterforge.certify.results import NodeResult

    changed = {**STATE, "files": {"/etc/x.conf": {**STATE["files"]["/etc/x.conf"], "sha256": "b" * 64}}}
    ran, plan = _fast_setup(monkeypatch, {"n3": STATE}, {h: {"state": STATE} for h in ("n1", "n2", "n3")})
    ssh_checks: list[list[str]] = []
    stepped: list[tuple[list[str], list[str]]] = []

    def fake_checks(plan_doc: Any, inv: Any, tier: str, hosts: list[str], *a: Any, **kw: Any) -> Any:
        ssh_checks.append(list(hosts))
        return {}

    def fake_step(
        scheduler: Any, plan_doc: Any, inv: Any, hosts: list[str], fast: Any, env: Any, cancel: Any
    ) -> StepAnswer:
        stepped.append((list(hosts), sorted(h for h in hosts if h in fast)))
        bad = CheckResult("n2", "os.sysctl", "fail", "m", expected="1", found="60", fix="f")
        return StepAnswer(
            results={"n1": NodeResult("n1", complete=True), "n2": NodeResult("n2", [bad], complete=True)},
            states={"n1": changed},
            state_errors={"n2": "not answered in the Slurm step: no answer (srun exit 1)"},
        )

    monkeypatch.setattr(drift_run, "run_checks", fake_checks)
    monkeypatch.setattr(drift_run, "_step", fake_step)
    rep = drift_run.drift(plan, Path("inv"), scheduler=_Slurm())
    assert stepped == [(["n1", "n2"], ["n1", "n2"])] and ssh_checks == [["n3"]]
    assert sorted((i.node, i.setting) for i in rep.items) == [("n1", "file /etc/x.conf"), ("n2", "os.sysctl")]
    assert rep.errors == [
        "n2: applied-state read failed: not answered in the Slurm step: no answer (srun exit 1)"
    ]
    assert ran == [["n1"]]  # the changed node is explained by the check run, as over SSH


def test_nodes_the_step_brought_nothing_back_for_are_read_over_ssh(monkeypatch: pytest.MonkeyPatch) -> None:
    """n2's slurmd was not up (e.g. just rebooted): the step brought nothing back, so its validators and
    applied state are read over SSH in the same run, as a node not in the pool is: no error, its drift
    found; n1's torn answer is not retried (an error, never clean)."""
    from clusterforge.certify.node_job import StepAnswer, step_error

    changed = {**STATE, "files": {"/etc/x.conf": {**STATE["files"]["/etc/x.conf"], "sha256": "b" * 64}}}
    _, plan = _fast_setup(
        monkeypatch, {"n2": changed, "n3": STATE}, {h: {"state": STATE} for h in ("n1", "n2", "n3")}
    )
    ssh_checks: list[list[str]] = []

    def fake_checks(plan_doc: Any, inv: Any, tier: str, hosts: list[str], *a: Any, **kw: Any) -> Any:
        ssh_checks.append(list(hosts))
        bad = CheckResult("n2", "os.sysctl", "fail", "m", expected="1", found="60", fix="f")
        return {h: ([bad] if h == "n2" else []) for h in hosts}

    def fake_step(*a: Any) -> StepAnswer:
        answer = StepAnswer(unanswered={"n2"})
        for node, why in (("n1", "frame 2 of 3 missing"), ("n2", "no answer (srun exit 1)")):
            answer.results[node] = step_error(node, why, "checker.answer", "Slurm", "")
            answer.state_errors[node] = f"not answered in the Slurm step: {why}"
        return answer

    monkeypatch.setattr(drift_run, "run_checks", fake_checks)
    monkeypatch.setattr(drift_run, "_step", fake_step)
    rep = drift_run.drift(plan, Path("inv"), scheduler=_Slurm())
    assert ssh_checks == [["n3"], ["n2"]]
    assert sorted(i.setting for i in rep.items if i.node == "n2") == ["file /etc/x.conf", "os.sysctl"]
    assert [e for e in rep.errors if e.startswith("n2")] == []
    assert any(e.startswith("n1: applied-state read failed: not answered") for e in rep.errors), rep.errors
