"""Burn-in suspects a component only from measurements it made: a tool that crashed (non-zero exit, output
cut short or none), hung past its timeout or never ran gives `error` for its node naming the tool, no
suspected component, and a drain reason "cannot certify: <tool> …". A failure the tool reported itself
(perftest's completion error, nccl-tests' #wrong) is still a measurement, and a low value still fails.

Inputs are real captures (tests/fixtures/real/SOURCES.md), cut short here the way a crashed run leaves
them; the captures themselves are not edited."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from burnin_data import synthetic

from clusterforge.burnin import issue, measure, suite
from clusterforge.burnin.execute import Result, _pair_measurement
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.pairs import Pair, select_pairs
from clusterforge.burnin.verdicts import evaluate
from clusterforge.flows import burnin as flow
from clusterforge.plan.expect import NodeExpect, node_expect, nodes_of
from tests.conftest import REAL

NVB = (REAL / "nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt").read_text()
BW = (REAL / "ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt").read_text()
BW_FAILED = (REAL / "ib_write_bw__h200-gke-roce-host-a-failed-dranet__1.txt").read_text()
NCCL = (REAL / "nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt").read_text()
DIAG_JSON = (REAL / "dcgmi-diag-json__r2-1gpu-virtualclient__3.txt").read_text()
# CONSTRUCTED (no public capture of an aborted run was found; as tests/unit/hw/test_hw_dcgmi.py): the line
# DCGM's dcgmi/Diag.cpp prints when the diagnostic cannot complete.
DIAG_ABORT = (
    "Error: Unable to complete diagnostic for group 2147483647. "
    "Return: (-21) Host engine connection invalid/disconnected.\n"
)
NODES = ["roce-01", "roce-02", "ib-01", "ib-02"]
SEGV = "Segmentation fault (core dumped)\n"


def _cut(text: str, marker: str) -> str:
    """``text`` up to (not including) the first line containing ``marker``: a run that died there."""
    at = text.index(marker)
    return text[: text.rindex("\n", 0, at) + 1]


@pytest.fixture
def node(lab_plan: dict[str, Any]) -> NodeExpect:
    """ib-01 with 8 GPUs (the nvbandwidth capture's count)."""
    doc = copy.deepcopy(lab_plan)
    return node_expect(doc, next(n for n in doc["nodes"] if n["name"] == "ib-01"))


def _parse(node: NodeExpect, **sections: suite.Section) -> dict[str, list[Measurement]]:
    ms = measure.parse_node(node, {k.replace("_", "."): v for k, v in sections.items()}, suite.SuiteOptions())
    out: dict[str, list[Measurement]] = {}
    for m in ms.measurements:
        out.setdefault(m.test, []).append(m)
    return out


def test_nvbandwidth_cut_short_by_a_crash_measures_nothing(node: NodeExpect) -> None:
    cut = _cut(NVB, "SUM device_to_device")  # died before the case's SUM line
    by = _parse(node, nvbandwidth=suite.Section(139, cut, SEGV))
    nvb = [m for t, ms in by.items() if t.startswith("nvbandwidth") for m in ms]
    assert nvb and not any(m.ok or m.component for m in nvb)
    assert {m.unmeasured for m in nvb} == {"nvbandwidth"}
    assert any(m.error.startswith("cannot certify: nvbandwidth crashed (exit 139") for m in nvb)


def test_nvbandwidth_complete_case_measures_and_an_absent_case_is_not_a_gpu_fault(node: NodeExpect) -> None:
    by = _parse(node, nvbandwidth=suite.Section(0, NVB, ""))  # the capture ran the d2d case only
    assert len(by["nvbandwidth.d2d"]) == 8 and all(m.ok for m in by["nvbandwidth.d2d"])
    (h2d,) = by["nvbandwidth.h2d"]
    assert h2d.unmeasured == "nvbandwidth" and not h2d.component
    assert h2d.error == "cannot certify: nvbandwidth printed no host_to_device_memcpy_ce result"


def test_loopback_truncated_or_hung_measures_nothing(node: NodeExpect) -> None:
    cut = _cut(BW, " 65536 ")  # the table stops after a few sizes, no closing line, no error of its own
    by = _parse(node, loopback_0=suite.Section(137, cut, ""), loopback_1=suite.Section(1, cut, SEGV))
    lb = {m.component: m for m in by["ib_write_bw.loopback"]}
    assert lb["rail0"].error == "cannot certify: ib_write_bw timed out after 120 s"
    assert (
        lb["rail1"].error == "cannot certify: ib_write_bw crashed (exit 1: Segmentation fault (core dumped))"
    )
    assert lb["rail0"].unmeasured == lb["rail1"].unmeasured == "ib_write_bw"


def test_loopback_error_reported_by_perftest_is_a_measurement(node: NodeExpect) -> None:
    by = _parse(node, loopback_0=suite.Section(1, BW_FAILED, ""))
    m = next(m for m in by["ib_write_bw.loopback"] if m.component == "rail0")
    assert not m.ok and not m.unmeasured and "Completion with error" in m.error


def test_allreduce_table_cut_short_is_not_a_low_bandwidth(node: NodeExpect) -> None:
    cut = _cut(NCCL, "# Out of bounds values")  # rows printed, then killed before the footer
    m = _parse(node, allreduce=suite.Section(134, cut, "Aborted (core dumped)\n"))["all_reduce.node"][0]
    assert m.value is None and m.unmeasured == "all_reduce_perf"
    assert m.error == "cannot certify: all_reduce_perf crashed (exit 134: Aborted (core dumped))"
    ok = _parse(node, allreduce=suite.Section(0, NCCL, ""))["all_reduce.node"][0]
    assert ok.ok and ok.value


def test_dcgm_aborted_or_truncated_measures_nothing(node: NodeExpect) -> None:
    aborted = _parse(node, dcgm=suite.Section(255, DIAG_ABORT, ""))["dcgm.diag"][0]
    assert aborted.unmeasured == "dcgmi diag" and "aborted: Error: Unable to complete" in aborted.error
    cut = DIAG_JSON[: len(DIAG_JSON) // 2]
    truncated = _parse(node, dcgm=suite.Section(137, cut, ""))["dcgm.diag"][0]
    assert truncated.error == "cannot certify: dcgmi diag timed out after 600 s"
    whole = _parse(node, dcgm=suite.Section(0, DIAG_JSON, ""))["dcgm.diag"][0]
    assert whole.ok and not whole.unmeasured


def test_pair_client_crash_is_an_error_on_the_client_but_a_reported_failure_counts() -> None:
    p = Pair("roce0", 2, "roce-01", "roce-02", "leaf-a", "leaf-a", "leaf")
    crashed = _pair_measurement(p, Result(139, _cut(BW, " 65536 "), SEGV), {})
    assert crashed.unmeasured == "ib_write_bw" and crashed.detail["on"] == "roce-01"
    assert crashed.error.startswith("cannot certify: ib_write_bw crashed (exit 139")
    hung = _pair_measurement(p, Result(124, "", "no answer within 75 s: ssh"), {})
    assert hung.error == "cannot certify: ib_write_bw timed out"
    failed = _pair_measurement(p, Result(1, BW_FAILED, ""), {})
    assert not failed.ok and not failed.unmeasured and "Completion with error" in failed.error


def test_group_allreduce_timeout_names_the_tool() -> None:
    m = measure.allreduce_measurement(
        "all_reduce.group", "group:a+1", 124, "", "", peer="a,b", timeout_s=900, tool="all_reduce_perf (srun)"
    )
    assert m.error == "cannot certify: all_reduce_perf (srun) timed out after 900 s" and m.peer == "a,b"


def _replace(
    plan: dict[str, Any],
    rows: list[tuple[int, Measurement]],
    node: str,
    prefix: str,
    **sections: suite.Section,
) -> list[tuple[int, Measurement]]:
    """``node``'s rows of tests starting with ``prefix`` replaced, in every iteration, by what its script
    gives with these sections."""
    got = measure.parse_node(nodes_of(plan)[node], sections, suite.SuiteOptions()).measurements
    new = [m for m in got if m.test.startswith(prefix)]
    its = sorted({it for it, _ in rows})
    kept = [(it, m) for it, m in rows if not (m.node == node and m.test.startswith(prefix))]
    return kept + [(it, m) for it in its for m in new]


def test_crashed_tool_gives_error_no_suspect_and_a_cannot_certify_drain(lab_plan: dict[str, Any]) -> None:
    cut = _cut(NVB, "SUM device_to_device")
    rows = _replace(
        lab_plan, synthetic(lab_plan, 3), "ib-02", "nvbandwidth", nvbandwidth=suite.Section(139, cut, SEGV)
    )
    ev = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan, NODES))
    v = ev.nodes["ib-02"]
    assert v.verdict == "error" and v.components == []
    assert [f.kind for f in v.findings] == ["not-run"]
    assert flow.drain_reason(v).startswith(
        "clusterforge: burnin cannot certify: nvbandwidth crashed (exit 139"
    )
    checks = {c["id"]: c["status"] for c in issue.cert_checks(ev, "ib-02")}
    assert checks["burnin.nvbandwidth.d2d"] == "error" and "fail" not in checks.values()
    assert all(ev.nodes[n].verdict == "pass" for n in NODES if n != "ib-02")


def test_timed_out_loopback_in_one_iteration_suspects_no_nic(lab_plan: dict[str, Any]) -> None:
    rows = synthetic(lab_plan, 3)
    bad = measure.parse_node(
        nodes_of(lab_plan)["ib-01"], {"loopback.3": suite.Section(124, "", "")}, suite.SuiteOptions()
    ).measurements
    hung = next(m for m in bad if m.test == "ib_write_bw.loopback" and m.component == "rail3")
    rows = [(it, m) for it, m in rows if not (it == 2 and m.key == hung.key)] + [(2, hung)]
    v = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan, NODES)).nodes["ib-01"]
    assert v.verdict == "error" and v.components == []
    assert flow.drain_reason(v) == "clusterforge: burnin cannot certify: ib_write_bw timed out after 120 s"


def test_a_measured_fault_still_fails_beside_a_crash(lab_plan: dict[str, Any]) -> None:
    cut = _cut(NCCL, "# Out of bounds values")
    rows = synthetic(lab_plan, 3, factors={("ib-01", "gpu", "gpu5"): 0.6})
    rows = _replace(lab_plan, rows, "ib-01", "all_reduce.node", allreduce=suite.Section(134, cut, ""))
    v = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan, NODES)).nodes["ib-01"]
    assert v.verdict == "fail" and v.components == ["GPU 5"]
    assert v.findings[-1].kind == "not-run" and "all_reduce_perf crashed" in v.findings[-1].summary
