"""The simulated smpquery: the far end of each InfiniBand rail over a directed route, from the lab plan's
cabling (plan/desired_fabric.rail_neighbours), in infiniband-diags' print format and failure modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.fabric.observed import switch_name
from clusterforge.hw import ibmad
from clusterforge.lab.sim import smpquery
from clusterforge.lab.sim import state as S
from clusterforge.plan import Plan
from clusterforge.plan.desired_fabric import fabric_entry, rail_neighbours

from .conftest import SimNode


def _planned(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    node = next(n for n in doc["nodes"] if n["name"] == name)
    fabric = fabric_entry(doc, node["fabric"])
    assert fabric is not None
    return rail_neighbours(node)


@pytest.fixture
def labib(simroot: Path, lab_plan: Plan) -> SimNode:
    return SimNode(simroot / "lab-ib", "h100-sxm-8x400g-ib", node="ib-01", plan=lab_plan.doc)


def _read(node: SimNode, hca: str) -> tuple[dict[str, str], dict[str, str]]:
    desc = node.ok("smpquery", "-C", hca, "-P", "1", "-D", "nodedesc", "0,1")
    info = node.ok("smpquery", "-C", hca, "-P", "1", "-D", "portinfo", "0,1")
    return ibmad.parse_fields(desc, "smpquery"), ibmad.parse_fields(info, "smpquery")


def test_far_end_is_the_planned_leaf_port(labib: SimNode, lab_plan: Plan) -> None:
    planned = _planned(lab_plan.doc, "ib-01")
    assert len(planned) == 8
    for w in planned:
        desc, info = _read(labib, w["hca"])
        assert switch_name(desc["Node Description"]) == w["switch"]
        assert desc["Node Description"] == f"MF0;{w['switch']}:MQM9700/U1"  # lab fabric ib0 is QM9700
        assert int(info["LocalPort"]) == w["switch_port"]
        assert info["LinkState"] == "Active"


def test_print_format_is_libibmads(labib: SimNode) -> None:
    desc = labib.ok("smpquery", "-C", "mlx5_0", "-P", "1", "-D", "nodedesc", "0,1")
    name = "MF0;ib0-leaf-su0-r0:MQM9700/U1"
    assert desc == "Node Description:" + "." * (32 - len(name)) + name + "\n"  # smpquery.c node_desc
    info = labib.ok("smpquery", "-C", "mlx5_0", "-P", "1", "-D", "portinfo", "0,1").splitlines()
    assert info[0] == "# Port info: DR path slid 65535; dlid 65535; 0,1 port 0"
    assert "LocalPort:.......................1" in info  # name + dots fill 32 columns, as in real captures
    assert "LinkState:.......................Active" in info
    assert smpquery.field("LocalPort", 1) == "LocalPort:.......................1\n"


def test_alias_and_case_of_ops(labib: SimNode) -> None:
    assert labib.ok("smpquery", "-C", "mlx5_1", "-P", "1", "-D", "ND", "0,1") == labib.ok(
        "smpquery", "-C", "mlx5_1", "-P", "1", "-D", "NodeDesc", "0,1"
    )


def test_bad_option_or_op_fails_like_the_real_tool(labib: SimNode) -> None:
    rc, out, err = labib.run("smpquery", "-Z", "-D", "nodedesc", "0,1")
    assert rc == 2 and out == "" and "invalid option -- 'Z'" in err and "Usage: smpquery" in err
    rc, out, err = labib.run("smpquery", "-D", "nodedesc")
    assert rc == 2 and "Usage: smpquery" in err
    rc, out, _ = labib.run("smpquery", "-D", "nodeinfoo", "0,1")
    assert (rc, out) == (255, "smpquery: iberror: failed: operation 'nodeinfoo' not supported\n")
    rc, out, _ = labib.run("smpquery", "-C", "mlx5_9", "-P", "1", "-D", "nodedesc", "0,1")
    assert (rc, out) == (255, "smpquery: iberror: failed: Failed to open 'mlx5_9' port '1'\n")


def test_down_port_times_out_the_directed_route(labib: SimNode) -> None:
    labib.fault("rail-down", rail=2)
    rc, out, err = labib.run("smpquery", "-C", "mlx5_2", "-P", "1", "-D", "nodedesc", "0,1")
    assert rc == 255
    assert out == "smpquery: iberror: failed: operation nodedesc: node info query failed\n"
    assert "mad_rpc: _do_madrpc failed; dport (DR path slid 65535; dlid 65535; 0,1)" in err
    rc, out, _ = labib.run("smpquery", "-C", "mlx5_2", "-P", "1", "-D", "portinfo", "0,1")
    assert rc == 255 and "operation portinfo: port info query failed" in out
    labib.ok("smpquery", "-C", "mlx5_3", "-P", "1", "-D", "nodedesc", "0,1")  # other rails answer
    labib.clear("rail-down")
    labib.ok("smpquery", "-C", "mlx5_2", "-P", "1", "-D", "nodedesc", "0,1")


def test_cable_swap_crosses_two_rails_until_cleared(labib: SimNode, lab_plan: Plan) -> None:
    planned = {w["rail"]: w for w in _planned(lab_plan.doc, "ib-01")}
    labib.fault("cable-swap", rail="2,5")
    d2, i2 = _read(labib, planned[2]["hca"])
    d5, i5 = _read(labib, planned[5]["hca"])
    assert (switch_name(d2["Node Description"]), int(i2["LocalPort"])) == (
        planned[5]["switch"],
        planned[5]["switch_port"],
    )
    assert (switch_name(d5["Node Description"]), int(i5["LocalPort"])) == (
        planned[2]["switch"],
        planned[2]["switch_port"],
    )
    d0, _ = _read(labib, planned[0]["hca"])
    assert switch_name(d0["Node Description"]) == planned[0]["switch"]
    labib.clear("cable-swap")
    d2, i2 = _read(labib, planned[2]["hca"])
    assert (switch_name(d2["Node Description"]), int(i2["LocalPort"])) == (
        planned[2]["switch"],
        planned[2]["switch_port"],
    )


def test_cable_swap_needs_two_rails(labib: SimNode) -> None:
    for bad in ("3", "3,3", "1,2,3", "1,99"):
        rc, _, err = labib.run("fault", "set", "cable-swap", f"rail={bad}")
        assert rc == 2 and "cable-swap: rail" in err, (bad, err)
    assert "cable-swap" not in labib.state["faults"]


def test_roce_port_has_no_smi(simroot: Path, lab_plan: Plan) -> None:
    roce = SimNode(simroot / "lab-roce", "h100-sxm-8x400g-roce", node="roce-01", plan=lab_plan.doc)
    assert all(n["far_end"] is None for n in roce.state["nics"])
    rc, out, _ = roce.run("smpquery", "-C", "mlx5_0", "-P", "1", "-D", "nodedesc", "0,1")
    assert (rc, out) == (255, "smpquery: iberror: failed: Failed to open 'mlx5_0' port '1'\n")


def test_a_plan_without_fabric_cabling_gives_no_far_end(ibnode: SimNode) -> None:
    assert all(n["far_end"] is None for n in ibnode.state["nics"])
    rc, out, _ = ibnode.run("smpquery", "-C", "mlx5_0", "-P", "1", "-D", "nodedesc", "0,1")
    assert rc == 255 and "node info query failed" in out


def test_switch_description_form() -> None:
    assert S.switch_description("leaf-1", "qm9700") == "MF0;leaf-1:MQM9700/U1"
