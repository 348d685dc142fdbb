"""The drain reason of a node whose tool is missing says so ("cannot certify: <tool> missing (install: role
R, tag T)"), after certification and in the admission policy; a failed check still reads as failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.certify.results import CheckResult
from clusterforge.flows import admit
from clusterforge.plan.expect import NodeExpect
from clusterforge.pool.file import FilePool
from clusterforge.records import Store

from .conftest import node_result
from .test_admit import run

MSG = (
    "cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks) on ib-01; "
    "`nvbandwidth` is not installed or not on PATH: exit 127: sh: 1: nvbandwidth: not found"
)
REASON = "clusterforge: cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks)"


def _missing(node: str) -> Any:
    res = node_result(node, {"gpu.count": "pass"})
    for case in ("d2d", "h2d"):
        res.checks.append(CheckResult(node, f"performance.nvbandwidth[case={case}]", "error", message=MSG))
    return res


def test_drain_reason_names_the_missing_tool() -> None:
    res = _missing("ib-01")
    assert res.verdict == "error"
    assert admit.drain_reason(res) == REASON
    res.checks.append(CheckResult("ib-01", "gpu.xid", "fail", message="x"))
    assert admit.drain_reason(res) == REASON + " (+1 failed checks)"
    failed = node_result("ib-01", {"gpu.count": "pass", "performance.nvbandwidth[case=d2d]": "fail"})
    assert admit.drain_reason(failed) == "clusterforge: performance.nvbandwidth case:d2d: drain"


def test_admission_drains_with_the_missing_tool(
    records: Path, lab_doc: dict[str, Any], lab_nodes: dict[str, NodeExpect]
) -> None:
    pool, store = FilePool(records / "pool.json"), Store()
    res = _missing("ib-01")
    rec = run(lab_doc, lab_nodes["ib-01"], res)
    out = admit.admit_or_drain(lab_doc, res, pool, store, rec.run_id)
    assert out == "drained: clusterforge: quick: " + REASON.removeprefix("clusterforge: ")
    assert pool.status(["ib-01"])["ib-01"].reason == out.removeprefix("drained: ")
