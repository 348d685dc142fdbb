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


class _Target:
    def prepare(self, doc: Any, console: Any) -> None:
        pass

    def environment(self, doc: Any) -> dict[str, str]:
        return {}

    def pool_manager(self, doc: Any) -> Any:
        return None


@pytest.mark.parametrize(
    ("opts", "full", "reads"),
    [
        ({}, False, True),
        ({}, True, False),  # --full
        ({"check": True}, False, False),  # --check predicts what site.yml would do on every node
        ({"tags": "rdma"}, False, False),
        ({"extra_vars": {"x": 1}}, False, False),
    ],
)
def test_provision_reads_first_unless_told_to_run_every_node(
    monkeypatch: pytest.MonkeyPatch, opts: dict[str, Any], full: bool, reads: bool
) -> None:
    from types import SimpleNamespace

    from rich.console import Console

    from clusterforge.flows import provision as flow
    from clusterforge.run.provision import Options, ProvisionReport

    asked: list[str | None] = []
    given: list[dict[str, str]] = []

    def fake_converged(doc: Any, inv: Any, limit: str | None, *a: Any) -> mod.Converged:
        asked.append(limit)
        return mod.Converged({"n1": "read as applied"}, {"n2": "no applied state on record"})

    def fake_recorded(doc: Any, inv: Any, o: Options, *a: Any) -> ProvisionReport:
        given.append(dict(o.converged))
        return ProvisionReport("r", "c", "h", o.check, 0.0)

    monkeypatch.setattr(flow, "load_plan", lambda spec: (SimpleNamespace(doc={"cluster": "c"}), Path("inv")))
    monkeypatch.setattr(flow.targets, "for_plan", lambda doc: _Target())
    monkeypatch.setattr(flow, "converged", fake_converged)
    monkeypatch.setattr(flow, "provision_recorded", fake_recorded)
    console = Console(record=True, width=200)
    rc = flow.provision_flow(Path("spec.yaml"), Options(limit="n*", **opts), console, full=full)
    assert rc == 0
    assert asked == (["n*"] if reads else []) and given == [{"n1": "read as applied"} if reads else {}]
    text = console.export_text()
    assert ("site.yml on n2: no applied state on record" in text) is reads


def test_provision_via_an_unknown_engine_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from clusterforge.flows import provision as flow
    from clusterforge.run.provision import Options

    monkeypatch.setattr(flow, "load_plan", lambda spec: pytest.fail("nothing is read before the check"))
    assert flow.provision_flow(Path("s.yaml"), Options(), Console(), via="pdsh") == 2
