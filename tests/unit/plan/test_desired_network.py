"""plan/desired_network.py: the management network compiled from the SKU, fabrics.management and
addressing.gateway (the link speed is the slower end's; no gateway declared, none certified)."""

from __future__ import annotations

import pytest

from clusterforge.plan import desired_network as N
from clusterforge.plan.desired_network import management_desired, management_input

SKU = {"management_nic": {"count": 1, "speed_gbps": 10, "netdev": "mgmt0"}}


@pytest.mark.parametrize(
    ("nic", "switch", "mbps"), [(10, 25, 10000), (25, 10, 10000), (25, 25, 25000), (1, 100, 1000)]
)
def test_the_link_runs_at_the_slower_end(nic: int, switch: int, mbps: int) -> None:
    sku = {"management_nic": {**SKU["management_nic"], "speed_gbps": nic}}
    d = management_desired(sku, management_input({"speed_gbps": switch, "mtu": 1500}, None))
    assert d["speed_mbps"] == mbps == N.link_speed_mbps(nic, switch)


def test_gateway_none_when_the_spec_declares_none() -> None:
    d = management_desired(SKU, management_input({"speed_gbps": 10, "mtu": 9000, "nics_per_node": 1}, None))
    assert d == {"netdev": "mgmt0", "speed_mbps": 10000, "mtu": 9000, "gateway": None}
    assert management_desired(SKU, management_input({"speed_gbps": 10, "mtu": 1500}, "10.0.0.1"))[
        "gateway"
    ] == ("10.0.0.1")


def test_every_example_plan_carries_it(example) -> None:
    for name, gateway in (("lab", "10.244.0.1"), ("h100-roce-2su", None), ("b200-ib-16su", None)):
        doc = example(name).doc
        for n in doc["nodes"][:3]:
            m = n["desired"]["management"]
            # the examples' 25 Gb/s switch ports on the catalog's 10 Gb/s NICs: certified at 10 Gb/s
            assert m == {"netdev": n["mgmt_netdev"], "speed_mbps": 10000, "mtu": 1500, "gateway": gateway}


def test_the_gateway_moves_the_expectation_digest(spec_text, plan_text) -> None:
    base = plan_text(spec_text("lab"))
    moved = plan_text(spec_text("lab").replace("gateway: 10.244.0.1", "gateway: 10.244.0.2"))
    a = {n["name"]: n["expectation_digest"] for n in base.doc["nodes"]}
    b = {n["name"]: n["expectation_digest"] for n in moved.doc["nodes"]}
    assert all(a[k] != b[k] for k in a)
    assert {n["desired"]["management"]["gateway"] for n in moved.doc["nodes"]} == {"10.244.0.2"}
