"""`Store.latest_applied`: each node's applied state from its latest provision run that touched it."""

from __future__ import annotations

import time
from pathlib import Path

from clusterforge.records import Store
from clusterforge.records.model import NodeOutcome, RunOutcome
from clusterforge.records.outcomes import recorded_run


def _provision(nodes: list[NodeOutcome], cluster: str = "lab", tier: str | None = None) -> None:
    status = "passed" if all(n.outcome in ("ok", "changed", "skipped") for n in nodes) else "failed"
    with recorded_run("provision", cluster, plan_hash="p", tier=tier) as rec:
        rec.finish(RunOutcome(status, "x", tuple(nodes)))
    time.sleep(0.002)  # recorded_at has microseconds; keep the order unambiguous


def _ok(node: str, tag: str) -> NodeOutcome:
    return NodeOutcome(node, "ok", detail={"applied": {"tag": tag}})


def test_latest_run_that_touched_the_node_wins(records_dir: Path) -> None:
    _provision([_ok("n1", "first"), _ok("n2", "first"), _ok("n3", "first")])
    _provision([_ok("n1", "second"), NodeOutcome("n2", "failed"), NodeOutcome("n3", "skipped")])
    _provision([_ok("n1", "check")], tier="check")  # a check-mode run changed nothing
    _provision([_ok("n1", "other cluster")], cluster="other")
    with Store() as store:
        got = store.latest_applied("lab", ["n1", "n2", "n3", "n4"])
    assert got == {
        "n1": {"tag": "second"},
        "n2": None,  # failed since: its state is unknown
        "n3": {"tag": "first"},  # skipped by the later run: untouched
        "n4": None,  # never provisioned
    }


def test_a_provision_without_an_applied_state_leaves_it_unknown(records_dir: Path) -> None:
    _provision([_ok("n1", "first")])
    _provision([NodeOutcome("n1", "changed", 3, detail={"applied_error": "unreachable"})])
    with Store() as store:
        assert store.latest_applied("lab", ["n1"]) == {"n1": None}


def test_an_interrupted_run_does_not_count(records_dir: Path) -> None:
    _provision([_ok("n1", "first")])
    try:
        with recorded_run("provision", "lab", plan_hash="p"):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    with Store() as store:
        assert store.latest_applied("lab", ["n1"]) == {"n1": {"tag": "first"}}
