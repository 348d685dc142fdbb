"""A missing tool is never failed hardware: burn-in gives `error`, suspects nothing, and the drain reason
says which tool is missing and which role installs it; a tool that ran and measured low still fails the
component it measured (so these tests can fail both ways)."""

from __future__ import annotations

from typing import Any

from burnin_data import synthetic

from clusterforge.burnin import issue, measure, suite
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.pairs import select_pairs
from clusterforge.burnin.verdicts import evaluate
from clusterforge.flows import burnin as flow
from clusterforge.plan.expect import nodes_of

NODES = ["roce-01", "roce-02", "ib-01", "ib-02"]
REASON = "clusterforge: burnin cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks)"


def _without_nvbandwidth(lab_plan: dict[str, Any], rows: list[tuple[int, Measurement]], node: str) -> list:
    """``node``'s nvbandwidth rows replaced by what its script gives when the tool is not installed."""
    expect = nodes_of(lab_plan)[node]
    sections = {"nvbandwidth": suite.Section(127, "", "sh: 1: nvbandwidth: not found\n")}
    sample = measure.parse_node(expect, sections, suite.SuiteOptions())
    gone = [m for m in sample.measurements if m.test.startswith("nvbandwidth")]
    assert gone and all(m.missing == "nvbandwidth" and not m.ok for m in gone)
    its = sorted({it for it, _ in rows})
    kept = [(it, m) for it, m in rows if not (m.node == node and m.test.startswith("nvbandwidth"))]
    return kept + [(it, m) for it in its for m in gone]


def test_missing_tool_is_error_without_suspect(lab_plan: dict[str, Any]) -> None:
    rows = _without_nvbandwidth(lab_plan, synthetic(lab_plan, 3), "ib-01")
    ev = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan, NODES))
    v = ev.nodes["ib-01"]
    assert v.verdict == "error"
    assert v.components == []  # no GPU is suspected from a test that did not run
    assert [f.kind for f in v.findings] == ["missing"]
    assert flow.drain_reason(v) == REASON
    checks = {c["id"]: c["status"] for c in issue.cert_checks(ev, "ib-01")}
    assert checks["burnin.nvbandwidth.h2d"] == "error" and "fail" not in checks.values()
    assert all(ev.nodes[n].verdict == "pass" for n in NODES if n != "ib-01")


def test_tool_that_ran_and_measured_low_fails_with_suspect(lab_plan: dict[str, Any]) -> None:
    rows = synthetic(lab_plan, 3, factors={("ib-01", "gpu", "gpu0"): 0.6})
    ev = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan, NODES))
    v = ev.nodes["ib-01"]
    assert v.verdict == "fail" and v.components == ["GPU 0"]
    assert "cannot certify" not in flow.drain_reason(v)


def test_measured_fault_still_fails_when_another_tool_is_missing(lab_plan: dict[str, Any]) -> None:
    rows = synthetic(lab_plan, 3, factors={("ib-01", "nic", "rail3"): 0.7})
    ev = evaluate(
        _without_nvbandwidth(lab_plan, rows, "ib-01"), lab_plan, NODES, select_pairs(lab_plan, NODES)
    )
    v = ev.nodes["ib-01"]
    assert v.verdict == "fail" and v.components == ["rail 3 NIC mlx5_3"]
    assert v.findings[-1].kind == "missing" and v.findings[0].kind != "missing"


def test_every_section_names_its_missing_tool(lab_plan: dict[str, Any]) -> None:
    expect = nodes_of(lab_plan)["roce-01"]
    sections = {
        "dcgm": suite.Section(
            255,
            "Error: unable to establish a connection to the specified host: localhost\n"
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n",
            "",
        ),
        "allreduce": suite.Section(127, "", "bash: line 1: all_reduce_perf: command not found\n"),
        "ecc": suite.Section(127, "", "sh: 1: nvidia-smi: not found\n"),
        **{
            f"loopback.{r.index}": suite.Section(127, "", "sh: 1: ib_write_bw: not found\n")
            for r in expect.rails
        },
    }
    ms = measure.parse_node(expect, sections, suite.SuiteOptions()).measurements
    by = {m.test: m for m in ms}
    assert by["dcgm.diag"].missing == "nv-hostengine"
    assert by["dcgm.diag"].error == (
        "cannot certify: nv-hostengine not running (install and start: role nvidia_gpu, tag dcgm)"
    )
    assert by["all_reduce.node"].missing == "all_reduce_perf"
    assert by["ecc.corrected"].missing == "nvidia-smi"
    assert {m.missing for m in ms if m.test == "ib_write_bw.loopback"} == {"ib_write_bw"}
    assert (
        by["ib_write_bw.loopback"].error
        == "cannot certify: ib_write_bw missing (install: role rdma, tag rdma_packages)"
    )


def test_a_tool_that_ran_and_failed_is_not_missing(lab_plan: dict[str, Any]) -> None:
    expect = nodes_of(lab_plan)["roce-01"]
    sections = {"allreduce": suite.Section(1, "", "NCCL WARN Cuda failure 'out of memory'\n")}
    ms = measure.parse_node(expect, sections, suite.SuiteOptions()).measurements
    ar = next(m for m in ms if m.test == "all_reduce.node")
    assert not ar.ok and not ar.missing and "exit 1" in ar.error
