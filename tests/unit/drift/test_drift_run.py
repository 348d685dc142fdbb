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
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1", "n2"], 2, validators=True)
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
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1"], 2, validators=True)
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
        drift_run._check_and_validate(_report(), PLAN, Path("inv"), ["n1"], 2, validators=True)
    assert cancelled == [True]


def test_no_validators_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **kw: Any) -> None:
        raise AssertionError("validators must not run")

    monkeypatch.setattr(drift_run, "run_checks", boom)
    monkeypatch.setattr(drift_run, "ansible_drift", lambda report, *a: None)
    rep = _report()
    drift_run._check_and_validate(rep, PLAN, Path("inv"), ["n1"], 2, validators=False)
    assert rep.items == [] and rep.errors == []
