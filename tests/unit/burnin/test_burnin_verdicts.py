"""Findings and node verdicts from whole iterations of synthetic lab-shaped measurements."""

from __future__ import annotations

from typing import Any

import pytest
from burnin_data import synthetic

from clusterforge.burnin import issue
from clusterforge.burnin.model import Measurement, NodeVerdict
from clusterforge.burnin.pairs import select_pairs
from clusterforge.burnin.verdicts import evaluate
from clusterforge.flows import burnin as flow

NODES = ["roce-01", "roce-02", "ib-01", "ib-02"]


def run(plan: dict[str, Any], rows: list[tuple[int, Measurement]], nodes: list[str] = NODES) -> Any:
    return evaluate(rows, plan, nodes, select_pairs(plan, nodes))


@pytest.mark.parametrize("seed", range(6))
def test_slow_nic_and_slow_gpu_flagged_noisy_node_not(lab_plan: dict[str, Any], seed: int) -> None:
    rows = synthetic(
        lab_plan,
        3,
        seed=seed,
        noisy=("ib-02",),
        factors={("roce-01", "nic", "rail3"): 0.7, ("ib-01", "gpu", "gpu0"): 0.6},
    )
    ev = run(lab_plan, rows)
    assert {n: v.verdict for n, v in ev.nodes.items()} == {
        "roce-01": "fail",
        "roce-02": "pass",
        "ib-01": "fail",
        "ib-02": "pass",
    }
    assert ev.nodes["roce-01"].components == ["rail 3 NIC mlx5_3"]
    assert ev.nodes["ib-01"].components == ["GPU 0"]
    assert {f.test for f in ev.nodes["ib-01"].findings} >= {
        "nvbandwidth.h2d",
        "nvbandwidth.d2h",
        "all_reduce.node",
    }
    assert not ev.fabric
    # the pair on rail 3 is bad too, and explained by roce-01's NIC: roce-02 is not blamed
    assert [(s.scope, s.target, s.rail) for s in ev.suspects] == [("node", "roce-01", 3)]
    reason = flow.drain_reason(ev.nodes["roce-01"])
    assert reason.startswith("clusterforge: burnin outlier roce-01 rail 3 NIC mlx5_3 ib_write_bw ")
    assert " vs fleet 39" in reason and len(reason) <= 200


def test_healthy_fleet_passes(lab_plan: dict[str, Any]) -> None:
    ev = run(lab_plan, synthetic(lab_plan, 3))
    assert ev.passed and all(not v.findings for v in ev.nodes.values())


def test_ecc_growth_flags_the_gpu(lab_plan: dict[str, Any]) -> None:
    rows = [
        (it, m)
        for it, m in synthetic(lab_plan, 3)
        if not (m.test == "ecc.corrected" and m.node == "roce-02" and m.component == "gpu5")
    ]
    rows += [
        (
            it,
            Measurement(
                "ecc.corrected", "roce-02", "gpu5", value=v, unit="count", detail={"serial": "1650923000005"}
            ),
        )
        for it, v in ((1, 3.0), (2, 3.0), (3, 9.0))
    ]
    ev = evaluate(rows, lab_plan, NODES, select_pairs(lab_plan), serials=issue.serials(rows))
    v = ev.nodes["roce-02"]
    assert v.verdict == "fail" and v.components == ["GPU 5 (serial 1650923000005)"]
    assert v.findings[0].kind == "ecc" and v.findings[0].value == 6
    assert [n for n, x in ev.nodes.items() if x.verdict == "fail"] == ["roce-02"]


def test_link_error_growth_flags_the_cable_and_explains_the_pair(lab_plan: dict[str, Any]) -> None:
    rows = [
        (it, m)
        for it, m in synthetic(lab_plan, 3, factors={("ib-02", "ib_write_bw.pair", "rail6"): 0.5})
        if not (m.test == "ibcounter.symbol_error" and m.node == "ib-02" and m.component == "rail6")
    ]
    rows += [
        (it, Measurement("ibcounter.symbol_error", "ib-02", "rail6", value=float(40 * it), unit="count"))
        for it in (1, 2, 3)
    ]
    ev = run(lab_plan, rows)
    assert [n for n, x in ev.nodes.items() if x.verdict == "fail"] == ["ib-02"]
    f = ev.nodes["ib-02"].findings[0]
    assert f.kind == "link-errors" and f.component == "rail 6 link mlx5_6 <-> ib0-leaf-su0-r6:2"
    assert [(s.scope, s.target) for s in ev.suspects] == [("node", "ib-02")]


def test_unexplained_bad_pair_blames_both_ends(lab_plan: dict[str, Any]) -> None:
    rows = synthetic(lab_plan, 3, factors={("roce-02", "ib_write_bw.pair", "rail5"): 0.6})
    ev = run(lab_plan, rows)
    assert {n for n, x in ev.nodes.items() if x.verdict == "fail"} == {"roce-01", "roce-02"}
    assert all(f.kind == "ambiguous" for n in ("roce-01", "roce-02") for f in ev.nodes[n].findings)
    assert ev.nodes["roce-02"].components == ["rail 5 link mlx5_5 <-> roce0-leaf-su0-r5:2"]


def test_dcgm_failure_and_missing_measurements(lab_plan: dict[str, Any]) -> None:
    rows = []
    for it, m in synthetic(lab_plan, 3):
        if m.node == "ib-01" and m.test == "dcgm.diag" and it == 2:
            m = Measurement("dcgm.diag", "ib-01", value=0.0, unit="pass", detail={"failed": {"memory": [4]}})
        if m.node == "roce-02" and m.test == "ib_write_bw.loopback" and m.component == "rail1" and it == 3:
            m = Measurement(m.test, m.node, m.component, unit="Gb/s", error="Couldn't connect")
        rows.append((it, m))
    ev = run(lab_plan, rows)
    assert ev.nodes["ib-01"].components == ["GPU 4"]
    assert ev.nodes["roce-02"].findings[0].kind == "failed"
    assert "failed in 1 of 3 iterations" in ev.nodes["roce-02"].findings[0].summary


def test_node_without_any_measurement_is_an_error(lab_plan: dict[str, Any]) -> None:
    rows = [(it, m) for it, m in synthetic(lab_plan, 2) if m.node != "ib-02" and m.peer != "ib-02"]
    rows += [(1, Measurement("dcgm.diag", "ib-02", unit="pass", error="unreachable"))]
    ev = run(lab_plan, rows)
    assert ev.nodes["ib-02"].verdict == "fail"  # it failed what it was asked to do
    assert flow.drain_reason(ev.nodes["ib-02"]).startswith("clusterforge: burnin failed ib-02")
    empty = NodeVerdict("x", "error")
    assert flow.drain_reason(empty) == "clusterforge: burnin x: no measurement completed"


def test_slow_group_without_a_slow_member_is_a_fabric_finding(lab_plan: dict[str, Any]) -> None:
    groups = [["roce-01", "roce-02"], ["ib-01", "ib-02"], ["roce-02", "roce-01"], ["ib-02", "ib-01"]]

    def extra(it: int) -> list[Measurement]:
        return [
            Measurement(
                "all_reduce.group",
                f"group:{g[0]}+1",
                peer=",".join(g),
                unit="GB/s",
                value=(250.0 if i == 1 else 362.0) + it * 0.1,
            )
            for i, g in enumerate(groups)
        ]

    ev = run(lab_plan, synthetic(lab_plan, 3, extra=extra))
    assert all(v.verdict == "pass" for v in ev.nodes.values())
    assert [(f.kind, f.component) for f in ev.fabric] == [("group", "group ib-01,ib-02")]
    assert not ev.passed
    # the same slow group with a slow member: explained by that node, no fabric finding
    ev = run(lab_plan, synthetic(lab_plan, 3, extra=extra, factors={("ib-02", "gpu", "gpu1"): 0.6}))
    assert not ev.fabric and ev.nodes["ib-02"].verdict == "fail"
