"""`--via auto` (the default of certify, drift and provision's read): the spec's pool manager's engine when
it can run work on its nodes, else SSH; and nodes the engine brought nothing back for are read over SSH."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from clusterforge.certify.node_job import StepAnswer, step_error
from clusterforge.certify.results import CheckResult, NodeResult
from clusterforge.errors import ClusterforgeError
from clusterforge.flows import certify as certify_mod
from clusterforge.flows.node_side import ENGINES, VIA, bad_via, engine
from clusterforge.pool.base import NodeState


class _Pool:
    def __init__(self, name: str, down: tuple[str, ...] = ()) -> None:
        self.name, self.down = name, down

    def status(self, nodes: list[str]) -> dict[str, NodeState]:
        return {n: NodeState(n, "down" if n in self.down else "idle") for n in nodes}


class _Target:
    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def pool_manager(self, doc: Any) -> Any:
        if isinstance(self.pool, Exception):
            raise self.pool
        return self.pool

    def environment(self, doc: Any) -> dict[str, str]:
        return {}


@pytest.mark.parametrize("name", ["slurm", "kubernetes"])
def test_auto_takes_the_engine_of_a_pool_manager_that_runs_work(name: str) -> None:
    pool = _Pool(name)
    assert engine(_Target(pool), {}, "auto", "s.yaml", "drift") == (pool, "")


def test_auto_reads_over_ssh_when_the_pool_manager_runs_no_work() -> None:
    assert engine(_Target(_Pool("file")), {}, "auto", "s.yaml", "drift") == (None, "")
    # the manager cannot be set up here (e.g. the kubernetes extra is missing): SSH, not a failed run
    assert engine(_Target(ClusterforgeError("no kubernetes extra")), {}, "auto", "s", "drift") == (None, "")


def test_an_explicit_engine_other_than_the_specs_is_still_bad_input() -> None:
    scheduler, wrong = engine(_Target(_Pool("file")), {}, "slurm", "s.yaml", "drift")
    assert scheduler is None and "--via slurm needs the slurm pool manager" in wrong
    assert engine(_Target(_Pool("slurm")), {}, "ssh", "s.yaml", "drift") == (None, "")
    assert set(ENGINES) < set(VIA) and not bad_via("auto") and bad_via("pdsh")


def _passing(node: str) -> NodeResult:
    return NodeResult(node, [CheckResult(node, "os.governor", "pass")], complete=True)


def test_certify_reads_over_ssh_the_nodes_the_step_brought_nothing_back_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """n1 answered; n2's slurmd was not up (nothing came back): certified over SSH in the same run; n3 is
    down to Slurm: over SSH from the start; n4's answer was torn: its error stands (no second try)."""
    by_ssh: list[list[str]] = []

    def fake_ssh(doc: Any, inv: Any, names: list[str], tier: str, **kw: Any) -> dict[str, NodeResult]:
        by_ssh.append(list(names))
        return {n: _passing(n) for n in names}

    def fake_step(scheduler: Any, doc: Any, inv: Any, names: list[str], *a: Any, **kw: Any) -> StepAnswer:
        assert names == ["n1", "n2", "n4"]
        answer = StepAnswer(unanswered={"n2"})
        answer.results = {
            "n1": _passing("n1"),
            "n2": step_error("n2", "no answer (srun exit 1)", "checker.answer", "Slurm", "see {node}"),
            "n4": step_error("n4", "frame 3 of 5 missing", "checker.answer", "Slurm", "see {node}"),
        }
        return answer

    monkeypatch.setattr(certify_mod, "certify_nodes", fake_ssh)
    monkeypatch.setattr(certify_mod, "node_side", fake_step)
    console = Console(record=True, width=200)
    got = certify_mod._through_scheduler(
        console, {}, Path("inv"), ["n1", "n2", "n3", "n4"], _Pool("slurm", down=("n3",)), tmp_path, None,
        threading.Event(), _Target(None), certify_mod.Outputs(), "run",
    )  # fmt: skip
    assert by_ssh == [["n3"], ["n2"]]
    assert {n: r.verdict for n, r in got.items()} == {"n1": "pass", "n2": "pass", "n3": "pass", "n4": "error"}
    assert list(got) == ["n1", "n2", "n3", "n4"]
    assert "no answer from 1 node(s) (n2): over SSH" in console.export_text()


def test_a_cancelled_run_reads_nothing_more(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cancel = threading.Event()
    by_ssh: list[list[str]] = []

    def fake_step(*a: Any, **kw: Any) -> StepAnswer:
        cancel.set()
        res = step_error("n1", "cancelled", "checker.answer", "Slurm", "")
        return StepAnswer(results={"n1": res}, unanswered={"n1"})

    monkeypatch.setattr(
        certify_mod, "certify_nodes", lambda doc, inv, names, *a, **kw: by_ssh.append(names) or {}
    )
    monkeypatch.setattr(certify_mod, "node_side", fake_step)
    got = certify_mod._through_scheduler(
        Console(record=True), {}, Path("inv"), ["n1"], _Pool("slurm"), tmp_path, None, cancel, _Target(None),
        certify_mod.Outputs(), "run",
    )  # fmt: skip
    assert got["n1"].verdict == "error" and by_ssh == [[]]


def test_the_default_is_auto_everywhere() -> None:
    from clusterforge.cli import certify, drift, provision
    from clusterforge.flows import drift as drift_flow
    from clusterforge.flows import provision as provision_flow

    assert certify_mod.Outputs().via == "auto"
    assert inspect.signature(drift_flow.drift_flow).parameters["via"].default == "auto"
    assert inspect.signature(provision_flow.provision_flow).parameters["via"].default == "auto"
    for cmd in (certify.certify, drift.drift, provision.provision):
        assert inspect.signature(cmd).parameters["via"].default == "auto", cmd
