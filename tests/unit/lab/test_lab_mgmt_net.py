"""The lab plays the site's OS installer for the management network: each node's netns gets its address
and, when the plan declares a gateway (lab.yaml: the host's bridge address), the default route through it;
the host forwards nothing the nodes send (so they still have no route out)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from clusterforge.errors import InputError
from clusterforge.lab import config, labplan, net
from tests.conftest import example_plan


def lab_plan() -> labplan.LabPlan:
    return labplan.parse(copy.deepcopy(example_plan("lab").doc))


def test_the_lab_spec_routes_every_node_via_the_hosts_bridge_address() -> None:
    plan = lab_plan()
    assert {n.mgmt_gateway for n in plan.nodes} == {config.HOST_IP} == {"10.244.0.1"}
    roce = plan.node("roce-01")
    lines = net.node_lines(roce)
    assert lines[:4] == [
        "link set lo up",
        "link set mgmt0 up",
        f"addr add {roce.mgmt_ip}/24 dev mgmt0",
        "route replace default via 10.244.0.1 dev mgmt0",
    ]
    assert lines[4:] == [f"link set {r.netdev} up" for r in roce.rails]  # rails: up, no address, no route


def test_no_gateway_in_the_plan_no_default_route() -> None:
    raw = copy.deepcopy(example_plan("lab").doc)
    for n in raw["nodes"]:
        n["desired"]["management"]["gateway"] = None
    node = labplan.parse(raw).nodes[0]
    assert node.mgmt_gateway is None and not any("route" in line for line in net.node_lines(node))
    del raw["nodes"][0]["desired"]  # a plan compiled before the desired state
    assert labplan.parse(raw).nodes[0].mgmt_gateway is None


def test_a_gateway_the_lab_does_not_have_is_refused() -> None:
    raw = copy.deepcopy(example_plan("lab").doc)
    raw["nodes"][1]["desired"] = copy.deepcopy(raw["nodes"][1]["desired"])
    raw["nodes"][1]["desired"]["management"]["gateway"] = "10.244.0.254"
    with pytest.raises(InputError) as exc:
        labplan.parse(raw)
    (p,) = exc.value.problems
    assert p.path == "nodes[1].desired.management.gateway" and p.found == "'10.244.0.254'"
    assert "10.244.0.1" in p.expected


def test_the_host_forwards_nothing_from_the_bridge(tmp_path: Path) -> None:
    (tmp_path / "cfbr0").mkdir()
    (tmp_path / "cfbr0" / "forwarding").write_text("1\n")  # as a host with ip_forward=1 creates it
    net.no_forwarding("cfbr0", proc=tmp_path)
    assert (tmp_path / "cfbr0" / "forwarding").read_text() == "0\n"
