"""Records and certificates through the records API: every check (and every perf attempt) recorded, part
serials kept per run, a certificate with everything the issue asks for, none for an incomplete run, and
the node lock that keeps two runs off the same nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.certify.issue import Recorder
from clusterforge.plan.expect import NodeExpect
from clusterforge.records import NodesBusy, Store, verify

from .conftest import node_result

ATTEMPTS = [
    {"n": 1, "value": 300.0, "unit": "GB/s", "passed": False, "error": ""},
    {"n": 2, "value": 470.0, "unit": "GB/s", "passed": True, "error": ""},
]


def start(doc: dict[str, Any], nodes: list[str]) -> Recorder:
    return Recorder.start(doc["cluster"], doc["plan_hash"], Path("lab.yaml"), "quick", nodes)


def test_certificate_content(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    node = lab_nodes["roce-01"]
    rec = start(lab_doc, ["roce-01"])
    res = node_result("roce-01", {"gpu.count": "pass", "performance.all_reduce": "pass"}, attempts=ATTEMPTS)
    rec.node_done(res, node)
    rec.finish("passed")
    cert = rec.issue(res, node, "quick")
    assert cert is not None and verify(cert).ok
    assert (cert["node"], cert["expectation_digest"], cert["plan_hash"], cert["tier"], cert["verdict"]) == (
        "roce-01",
        node.digest,
        lab_doc["plan_hash"],
        "quick",
        "pass",
    )
    assert {c["id"] for c in cert["checks"]} == {"inventory.parts", "gpu.count", "performance.all_reduce"}
    assert all({"expected", "found", "evidence"} <= c.keys() for c in cert["checks"])
    assert cert["tool_versions"]["nvidia_driver"] == "570.133.20"
    assert len(cert["serials"]["gpu"]) == 8 and cert["serials"]["nic"][0]["serial"] == "a088:c203:00aa:0000"
    assert cert["issuer"]["run_id"] == rec.run_id and cert["issuer"]["who"]
    hours = node.certification["validity_hours"]
    assert cert["valid_until"] > cert["issued_at"] and hours == 720
    assert rec.cert_paths["roce-01"].is_file()
    store = Store()
    assert store.certificates("roce-01", "quick")[0]["digest"] == cert["digest"]
    rows = store.check_results(rec.run_id, "roce-01")
    perf = [r for r in rows if r.check_id == "performance.all_reduce"]
    assert [(r.attempt, r.status) for r in perf] == [(1, "fail"), (2, "pass")]  # every attempt kept
    assert store.current_parts("roce-01")[("gpu", 0)] == "1650124000000"
    assert store.node_results(rec.run_id)[0].expectation_digest == node.digest


def test_failed_node_certificate_says_fail(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    rec = start(lab_doc, ["ib-01"])
    res = node_result("ib-01", {"gpu.count": "pass", "rdma.port[rail3]": "fail"})
    rec.node_done(res, lab_nodes["ib-01"])
    rec.finish("failed")
    cert = rec.issue(res, lab_nodes["ib-01"], "quick")
    assert cert is not None and cert["verdict"] == "fail"
    assert Store().failed_checks(rec.run_id, "ib-01") == ["rdma.port[rail3]"]


def test_incomplete_or_unreachable_gets_no_certificate(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    rec = start(lab_doc, ["ib-02"])
    res = node_result("ib-02", {"gpu.count": "pass"}, complete=False)
    rec.node_done(res, lab_nodes["ib-02"])
    assert Store().node_results(rec.run_id)[0].verdict == "error"
    rec.finish("failed")
    assert rec.issue(res, lab_nodes["ib-02"], "quick") is None
    unreachable = node_result("ib-02", {"ssh.reachable": "error"})
    unreachable.unreachable = True
    assert rec.issue(unreachable, lab_nodes["ib-02"], "quick") is None


def test_lock_keeps_two_runs_off_the_same_nodes(records: Path, lab_doc: dict[str, Any]) -> None:
    first = start(lab_doc, ["roce-01", "roce-02"])
    with pytest.raises(NodesBusy, match="roce-02 held by certify run"):
        start(lab_doc, ["roce-02", "ib-01"])
    other = start(lab_doc, ["ib-01"])  # disjoint nodes run side by side
    first.finish("passed")
    other.finish("passed")
    start(lab_doc, ["roce-02"]).finish("passed")  # released when the first run finished


def test_unfinished_run_never_reads_as_passed(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    rec = start(lab_doc, ["roce-02"])
    rec.node_done(node_result("roce-02", {"gpu.count": "pass"}), lab_nodes["roce-02"])
    store = Store()
    assert store.latest_passing_certification("roce-02") is None  # still running: does not count
    assert store.get_run(rec.run_id).status == "running"
