"""Admission: only a passing node with a valid certificate for its current expectation digest and every
required tier is admitted; anything else is drained with `clusterforge: <failed checks>`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from clusterforge.certify import admit
from clusterforge.certify.expect import NodeExpect
from clusterforge.certify.issue import Recorder
from clusterforge.pool.file import FilePool
from clusterforge.records import Store

from .conftest import node_result


def certified(
    doc: dict[str, Any],
    node: NodeExpect,
    statuses: dict[str, str],
    tier: str = "quick",
    complete: bool = True,
) -> tuple[Any, dict[str, Any] | None]:
    rec = Recorder.start(doc["cluster"], doc["plan_hash"], Path("lab.yaml"), tier, [node.name])
    res = node_result(node.name, statuses, complete=complete)
    rec.node_done(res, node)
    rec.finish("passed" if res.verdict == "pass" else "failed")
    return res, rec.issue(res, node, tier)


def test_pass_admits_and_fail_drains(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    good, bad = lab_nodes["roce-01"], lab_nodes["roce-02"]
    res, cert = certified(lab_doc, good, {"gpu.count": "pass"})
    d = admit.decide(good, res, cert, "quick", store)
    assert d.admit
    assert admit.apply(pool, d, cert, store, None) == "admitted"
    res, cert = certified(
        lab_doc, bad, {"gpu.count": "pass", "rdma.roce_qos[rail2]": "fail", "gpu.xid": "error"}
    )
    d = admit.decide(bad, res, cert, "quick", store)
    assert not d.admit and d.reason == "clusterforge: failed gpu.xid(error),rdma.roce_qos[rail2]"
    admit.apply(pool, d, cert, store, None)
    states = pool.status(["roce-01", "roce-02"])
    assert states["roce-01"].state == "idle"
    assert (states["roce-02"].state, states["roce-02"].reason) == ("drained", d.reason)
    assert [e.action for e in store.pool_events("roce-02")] == ["drain"]


def test_digest_change_or_tampering_is_not_admitted(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    node = lab_nodes["ib-01"]
    res, cert = certified(lab_doc, node, {"gpu.count": "pass"})
    moved = dataclasses.replace(node, digest="0" * 64)
    assert "another expectation digest" in admit.decide(moved, res, cert, "quick", Store()).reason
    assert cert is not None
    forged = dict(cert, verdict="pass", tier="quick", node="ib-01", checks=[])
    assert "invalid" in admit.decide(node, res, forged, "quick", Store()).reason


def test_required_tiers(records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]) -> None:
    node = dataclasses.replace(
        lab_nodes["ib-02"],
        certification={**lab_nodes["ib-02"].certification, "join_tiers": ["quick", "full"]},
    )
    res, cert = certified(lab_doc, node, {"gpu.count": "pass"})
    d = admit.decide(node, res, cert, "quick", Store())
    assert not d.admit and "no valid full certificate" in d.reason
    res_full, cert_full = certified(
        lab_doc, node, {"gpu.count": "pass", "performance.all_reduce": "pass"}, "full"
    )
    assert admit.decide(node, res_full, cert_full, "full", Store()).admit  # full covers quick
    assert admit.decide(node, res, cert, "quick", Store()).admit  # now a valid full one is on record


def test_unreachable_and_incomplete_reasons(lab_nodes: dict[str, NodeExpect]) -> None:
    from clusterforge.certify.runner import unreachable_result

    res = unreachable_result("roce-01", "Connection refused")
    assert res.verdict == "error" and res.status_word == "unreachable"
    assert (
        admit.decide(lab_nodes["roce-01"], res, None, "quick", None).reason
        == "clusterforge: unreachable (ssh.reachable)"
    )
    partial = node_result("roce-01", {"gpu.count": "pass"}, complete=False)
    partial.note = "incomplete: cancelled"
    assert admit.drain_reason(partial) == "clusterforge: incomplete: cancelled"
