"""Rails: netdevs named and addressed as in the plan; jumbo frames pass between nodes of one rail."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.lab


def _links(lab: Any, node: str) -> dict[str, dict[str, Any]]:
    r = lab.exec(node, ["ip", "-j", "link", "show"], timeout=30)
    assert r.returncode == 0, r.stderr
    return {d["ifname"]: d for d in json.loads(r.stdout)}


def test_rail_netdevs_as_planned(lab: Any) -> None:
    for n in lab.plan.nodes:
        links = _links(lab, n.name)
        assert links[n.mgmt_netdev]["address"] == n.mgmt_mac
        for rail in n.rails:
            link = links[rail.netdev]
            assert link["address"] == rail.mac
            assert (
                "UP" in link["flags"]
            )  # 1500 until the rdma role sets the plan's MTU (fresh node: lifecycle)
            assert link["mtu"] >= 1500


def _pair(lab: Any) -> tuple[Any, Any]:
    by_fabric: dict[str, list[Any]] = {}
    for n in lab.plan.nodes:
        if n.rails:
            by_fabric.setdefault(n.fabric, []).append(n)
    pairs = [v for v in by_fabric.values() if len(v) >= 2]
    if not pairs:
        pytest.skip("no two nodes share a fabric in this plan")
    return pairs[0][0], pairs[0][1]


def test_jumbo_ping_on_one_rail(lab: Any) -> None:
    a, b = _pair(lab)
    rail = a.rails[-1].index
    ra, rb = a.rails[-1], next(r for r in b.rails if r.index == rail)
    addrs = {a.name: (ra.netdev, "192.168.250.1"), b.name: (rb.netdev, "192.168.250.2")}
    # put back what was there (a provisioned node's rails run at its plan MTU, not the lab's 1500)
    mtu0 = {n: lab.exec(n, ["cat", f"/sys/class/net/{d}/mtu"]).stdout.strip() for n, (d, _) in addrs.items()}
    try:
        for name, (dev, ip) in addrs.items():
            r = lab.exec(name, ["sh", "-c", f"ip link set {dev} mtu 9000 && ip addr add {ip}/24 dev {dev}"])
            assert r.returncode == 0, r.stderr
        r = lab.exec(
            a.name, ["ping", "-c", "3", "-i", "0.2", "-W", "2", "-M", "do", "-s", "8972", "192.168.250.2"]
        )
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        # a rail cable pulled on the host side is seen by the node and stops traffic
        lab.set_rail_carrier(b.name, rail, False)
        try:
            assert "NO-CARRIER" in lab.exec(b.name, ["ip", "link", "show", rb.netdev]).stdout
            r = lab.exec(a.name, ["ping", "-c", "1", "-W", "1", "192.168.250.2"])
            assert r.returncode != 0
        finally:
            lab.set_rail_carrier(b.name, rail, True)
    finally:
        for name, (dev, ip) in addrs.items():
            lab.exec(name, ["sh", "-c", f"ip addr del {ip}/24 dev {dev}; ip link set {dev} mtu {mtu0[name]}"])


def test_each_rail_bridge_holds_that_rail_of_its_fabric(lab: Any) -> None:
    """Rail r of every node on fabric f, and nothing else, sits on bridge cfbr-<f>-<r> (host side)."""
    from clusterforge.lab import net

    links = net.links()
    members: dict[str, set[str]] = {}
    for name, d in links.items():
        if d.get("master"):
            members.setdefault(str(d["master"]), set()).add(name)
    expected: dict[str, set[str]] = {}
    for n in lab.plan.nodes:
        for r in n.rails:
            expected.setdefault(r.bridge, set()).add(r.host_link)
    for bridge, ends in expected.items():
        assert members.get(bridge) == ends, bridge
        assert links[bridge]["mtu"] == 9000
