"""Provision's read (`clusterforge.flows.converged`): a node is left alone only on evidence — read against
its applied state and checked by the quick validators, nothing found — never for lack of an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.flows import converged as mod


def _report(**kw: Any) -> DriftReport:
    rep = DriftReport("c", "h", ["n1", "n2", "n3", "n4", "n5", "n6", "n7"])
    for k, v in kw.items():
        setattr(rep, k, v)
    return rep


def test_only_nodes_read_checked_and_clean_are_converged(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_drift(doc: Any, inv: Any, limit: Any, **kw: Any) -> DriftReport:
        seen.update(kw)
        return _report(
            deep={"n2": "no applied state on record"},
            unreachable=["n3"],
            items=[
                DriftItem("n4", "os.sysctl", "10", "60", "validator os.sysctl"),
                DriftItem("n1", "certificate", "a", "b", "records", severity="warning"),
            ],
            errors=["n5: os.sysctl could not run: timeout"],
            compared=["n1", "n4", "n5", "n7"],  # n6: no applied-state read came back
            checked={"n1": 40, "n4": 40, "n5": 40, "n6": 40, "n7": 0},  # n7: no check result came back
        )

    monkeypatch.setattr(mod, "drift", fake_drift)
    found = mod.converged({}, Path("inv"), None, {})
    assert list(found.nodes) == ["n1"]  # a certificate of another digest is certification's business
    assert found.run["n2"] == "no applied state on record"
    assert "unreachable" in found.run["n3"]
    assert "os.sysctl: expected 10, found 60" in found.run["n4"]
    assert "timeout" in found.run["n5"]
    assert found.run["n6"].startswith("not read") and found.run["n7"].startswith("not read")
    assert seen["check_run"] is False  # a read only: no Ansible check run


def test_the_read_reads_only_nodes_with_an_applied_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """drift(check_run=False): the deep nodes are named, not read, not checked, not run through Ansible."""
    from clusterforge.flows import drift as drift_run

    plan = {
        "cluster": "c",
        "plan_hash": "h",
        "nodes": [{"name": n, "desired": {}} for n in ("n1", "n2")],
    }
    monkeypatch.setattr(drift_run, "resolve_hosts", lambda inv, limit: ["n1", "n2"])
    monkeypatch.setattr(drift_run, "plan_order", lambda hosts, doc: hosts)
    monkeypatch.setattr(drift_run, "_latest_applied", lambda c, hosts: dict.fromkeys(hosts))
    monkeypatch.setattr(drift_run, "certificate_drift", lambda *a: None)

    def boom(*a: Any, **kw: Any) -> Any:
        raise AssertionError("nothing to read or run")

    for name in ("run_checks", "read_states", "ansible_drift"):
        monkeypatch.setattr(drift_run, name, boom)
    rep = drift_run.drift(plan, Path("inv"), check_run=False)
    assert set(rep.deep) == {"n1", "n2"} and rep.items == [] and rep.compared == []
