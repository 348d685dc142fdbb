"""plan/desired_fabric.py: lldpd's desired settings, and each rail's expected neighbour equal to the cabling
sheet's (the per-node validator and `fabric check` use one source)."""

from __future__ import annotations

import json

import pytest

from clusterforge.plan.cabling import cable_sheet, node_rails
from clusterforge.plan.desired_fabric import fabric_entry, lldp_desired, rail_neighbours
from clusterforge.plan.expect import nodes_of
from tests.conftest import example_plan


@pytest.mark.parametrize("name", ["h100-roce-2su", "h100-ib-1su"])
def test_rail_neighbours_are_the_sheets_node_rails(name: str) -> None:
    plan = example_plan(name)
    doc = json.loads(json.dumps(plan.doc))  # what plan.json holds
    sheet = cable_sheet(plan)
    nodes = doc["nodes"]
    for n in [nodes[0], nodes[len(nodes) // 2], nodes[-1]]:
        fabric = fabric_entry(doc, n["fabric"])
        assert fabric is not None
        got = rail_neighbours(n)
        want = node_rails(plan, n["name"], sheet)
        assert [(g["rail"], g["netdev"], g["hca"]) for g in got] == [
            (w.rail, w.node_port, w.hca) for w in want
        ]
        assert [(g["switch"], g["switch_port"], g["switch_port_name"], g["cable_id"]) for g in got] == [
            (w.switch, w.switch_port, w.switch_port_name, w.cable_id) for w in want
        ]


def test_node_expect_carries_the_neighbours() -> None:
    doc = json.loads(json.dumps(example_plan("h100-roce-2su").doc))
    node = nodes_of(doc, names=[doc["nodes"][1]["name"]])[doc["nodes"][1]["name"]]
    ns = node.rail_neighbours
    assert len(ns) == len(node.rails) and ns[0]["netdev"] == node.rails[0].netdev
    assert all(n["switch_port_name"] and n["cable_id"] for n in ns)


def test_a_plan_without_the_compiled_cabling_names_the_fix() -> None:
    doc = json.loads(json.dumps(example_plan("h100-roce-2su").doc))
    name = doc["nodes"][0]["name"]
    for r in doc["nodes"][0]["rails"]:
        del r["leaf_port_name"]  # plan.json of an older clusterforge
    with pytest.raises(KeyError, match=r"have no leaf_port_name .*re-run `clusterforge plan`"):
        _ = nodes_of(doc, names=[name])[name].rail_neighbours


def test_lldp_desired_roce_ib_and_storage() -> None:
    roce = [
        {"index": 1, "netdev": "r1", "link_layer": "Ethernet"},
        {"index": 0, "netdev": "r0", "link_layer": "Ethernet"},
    ]
    sku = {"storage_nics": {"count": 2, "netdev": "stor0", "speed_gbps": 200}}
    d = lldp_desired(sku, roce)
    assert d["interfaces"] == ["r0", "r1", "stor0", "stor1"] and d["rail_interfaces"] == ["r0", "r1"]
    assert d["enabled"] and d["port_id_subtype"] == "ifname" and d["ib_rails"] == []
    ib = [{"index": 0, "netdev": "ib0", "link_layer": "InfiniBand"}]
    assert lldp_desired({}, ib) == {
        **d,
        "enabled": False,
        "interfaces": [],
        "rail_interfaces": [],
        "ib_rails": ["ib0"],
    }
    assert lldp_desired(sku, ib)["interfaces"] == ["stor0", "stor1"]


def test_plan_desired_state_has_lldp() -> None:
    plan = example_plan("h100-roce-2su")
    n = plan.doc["nodes"][0]
    assert n["desired"]["lldp"]["rail_interfaces"] == [r["netdev"] for r in n["rails"]]
