"""Admission after a run (through clusterforge.pool.admission): a passing node with a valid certificate
for its current expectation digest is admitted; a failing one is drained with `clusterforge: <failed
checks>`; a node this run could not check is drained even when an older certificate passed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.certify.issue import Recorder
from clusterforge.certify.results import NodeResult
from clusterforge.certify.runner import unreachable_result
from clusterforge.flows import admit
from clusterforge.plan.expect import NodeExpect
from clusterforge.pool.file import FilePool
from clusterforge.records import Store

from .conftest import node_result


def run(doc: dict[str, Any], node: NodeExpect, res: NodeResult, tier: str = "quick") -> Recorder:
    rec = Recorder.start(doc["cluster"], doc["plan_hash"], Path("lab.yaml"), tier, [node.name])
    rec.node_done(res, node)
    rec.finish("passed" if res.verdict == "pass" else "failed")
    rec.issue(res, node, tier)
    return rec


def test_pass_admits_and_fail_drains(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    res = node_result("roce-01", {"gpu.count": "pass"})
    rec = run(lab_doc, lab_nodes["roce-01"], res)
    assert admit.admit_or_drain(lab_doc, res, pool, store, rec.run_id) == "admitted"
    bad = node_result("roce-02", {"gpu.count": "pass", "rdma.roce_qos[rail2]": "fail", "gpu.xid": "fail"})
    rec = run(lab_doc, lab_nodes["roce-02"], bad)
    out = admit.admit_or_drain(lab_doc, bad, pool, store, rec.run_id)
    # the registry's decision names the check and its action chain; the other failure is counted after it
    assert (
        out == "drained: clusterforge: gpu.xid: drain then reset_gpu/service (+1 more: rdma.roce_qos[rail2])"
    )
    states = pool.status(["roce-01", "roce-02"])
    assert states["roce-01"].state == "idle"
    assert (states["roce-02"].state, states["roce-02"].reason) == (
        "drained",
        "clusterforge: gpu.xid: drain then reset_gpu/service (+1 more: rdma.roce_qos[rail2])",
    )
    assert [e.action for e in store.pool_events("roce-02")] == ["drain"]


def test_unreachable_is_drained_even_with_an_older_pass(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    ok = node_result("ib-01", {"gpu.count": "pass"})
    admit.admit_or_drain(lab_doc, ok, pool, store, run(lab_doc, lab_nodes["ib-01"], ok).run_id)
    gone = unreachable_result("ib-01", "Connection refused")
    rec = run(lab_doc, lab_nodes["ib-01"], gone)
    assert rec.certificates == {}
    assert (
        admit.admit_or_drain(lab_doc, gone, pool, store, rec.run_id)
        == "drained: clusterforge: unreachable (ssh.reachable)"
    )
    assert pool.status(["ib-01"])["ib-01"].state == "drained"


def test_failed_full_run_drains_despite_a_passing_quick_certificate(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    """join_tiers is [quick]: a node with a valid quick certificate that fails a full run is drained with the
    failed check, not re-admitted on the quick certificate."""
    pool, store = FilePool(records / "pool.json"), Store()
    ok = node_result("roce-01", {"gpu.count": "pass"})
    assert admit.admit_or_drain(lab_doc, ok, pool, store, run(lab_doc, lab_nodes["roce-01"], ok).run_id) == (
        "admitted"
    )
    slow = node_result("roce-01", {"gpu.count": "pass", "performance.ib_write_bw[rail3]": "fail"})
    rec = run(lab_doc, lab_nodes["roce-01"], slow, tier="full")
    out = admit.admit_or_drain(lab_doc, slow, pool, store, rec.run_id)
    assert out == "drained: clusterforge: performance.ib_write_bw rail3: drain then service +cable ticket"
    assert pool.status(["roce-01"])["roce-01"].state == "drained"


def test_incomplete_is_drained(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    part = node_result("ib-02", {"gpu.count": "pass"}, complete=False)
    part.note = "incomplete: cancelled"
    rec = run(lab_doc, lab_nodes["ib-02"], part)
    assert (
        admit.admit_or_drain(lab_doc, part, pool, store, rec.run_id)
        == "drained: clusterforge: incomplete: cancelled"
    )


def test_changed_digest_needs_recertification(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    res = node_result("roce-01", {"gpu.count": "pass"})
    run(lab_doc, lab_nodes["roce-01"], res)
    moved = {
        **lab_doc,
        "nodes": [
            dict(n, expectation_digest="0" * 64) if n["name"] == "roce-01" else n for n in lab_doc["nodes"]
        ],
    }
    out = admit.admit_or_drain(moved, res, pool, store, "r")
    assert out.startswith("drained") and "old expectation digest" in out


def test_full_run_certifies_quick_too(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    node = lab_nodes["ib-02"]
    res = node_result("ib-02", {"gpu.count": "pass", "performance.all_reduce": "pass"})
    for c in res.checks:
        c.tiers = ["full"] if c.check_id.startswith("performance") else ["quick", "full"]
    rec = run(lab_doc, node, res, "full")
    quick = Store().certificates("ib-02", "quick")[0]
    assert quick["issuer"]["run_id"] == rec.run_id
    assert {c["id"] for c in quick["checks"]} == {"inventory.parts", "gpu.count"}
    assert (
        admit.admit_or_drain(lab_doc, res, FilePool(records / "pool.json"), Store(), rec.run_id) == "admitted"
    )
    strict = {**lab_doc, "certification": {**lab_doc["certification"], "join_tiers": ["quick", "full"]}}
    assert (
        admit.admit_or_drain(strict, res, FilePool(records / "pool.json"), Store(), rec.run_id) == "admitted"
    )
