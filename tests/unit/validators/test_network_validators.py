"""validators/test_network.py: the management netdev (up, MTU, negotiated speed) and the default route,
judged against the node's desired `management` only. The node answers sysfs reads written here (the veth
values come from the lab-shape capture's notes in SOURCES.md) and `ip -j route show default` from the real
captures (tests/fixtures/real/ip-j-route-default__*)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

net = validator("network")
LAB_ROUTE = real("ip-j-route-default__netns-veth-mgmt0-via-10.244.0.1-lab-shape-local__2.txt")
NO_ROUTE = real("ip-j-route-default__netns-no-default-empty-array-local__3.txt")
TWO_ROUTES = real("ip-j-route-default__netns-two-defaults-static-metric100-linkdown-metric200-local__4.txt")
ECMP = real("ip-j-route-default__netns-ecmp-nexthops-mgmt0-eth9-local__5.txt")
OTHER_GW = real("ip-j-route-default__bookworm-vm-eth0-iproute2-6.1-local__1.txt")


def lab_node(roce_node: NodeExpect, **management: object) -> NodeExpect:
    """The lab plan's node with its desired management section changed by ``management``."""
    desired = dict(roce_node.desired)
    desired["management"] = {**desired["management"], **management}
    return replace(roce_node, desired_state=desired)


def answers(
    state: str = "up", mtu: str = "1500", speed: tuple[int, str] = (0, "10000"), route: str = LAB_ROUTE
) -> FakeNode:
    base = "/sys/class/net/mgmt0"
    return FakeNode(
        {
            f"cat {base}/operstate": (0, state + "\n"),
            f"cat {base}/mtu": (0, mtu + "\n"),
            f"cat {base}/speed": (speed[0], speed[1] + "\n" if speed[0] == 0 else "", speed[1]),
            net.ROUTE: (0, route),
        }
    )


def test_the_lab_plan_declares_what_the_lab_node_has(roce_node: NodeExpect) -> None:
    assert roce_node.desired["management"] == {
        "netdev": "mgmt0",
        "speed_mbps": 10000,  # lab.yaml: 10 Gb/s NIC and switch; a veth reports 10000 Mb/s
        "mtu": 1500,
        "gateway": "10.244.0.1",
    }
    node = answers()
    for check in (net.test_mgmt_up, net.test_mgmt_mtu, net.test_mgmt_speed, net.test_mgmt_default_route):
        check(roce_node, node)


def test_reads_are_prefetched_in_one_batch(roce_node: NodeExpect) -> None:
    cmds = net.commands(roce_node)
    assert cmds == [
        "cat /sys/class/net/mgmt0/operstate",
        "cat /sys/class/net/mgmt0/mtu",
        "cat /sys/class/net/mgmt0/speed",
        "ip -j route show default",
    ]
    assert net.ROUTE not in net.commands(lab_node(roce_node, gateway=None))


def test_a_slower_link_is_a_degraded_one(roce_node: NodeExpect) -> None:
    with pytest.raises(CheckFailed) as exc:
        net.test_mgmt_speed(roce_node, answers(speed=(0, "1000")))
    msg = str(exc.value)
    assert msg.startswith("degraded management netdev mgmt0 link speed: expected 10000 Mb/s; found 1000 Mb/s")
    assert "cable" in msg and "transceiver" in msg and "switch port" in msg


def test_the_speed_is_the_slower_end_of_the_link(roce_node: NodeExpect) -> None:
    slow = lab_node(roce_node, speed_mbps=1000)  # a plan whose slower end is 1 Gb/s
    net.test_mgmt_speed(slow, answers(speed=(0, "1000")))
    with pytest.raises(CheckFailed, match="faster than the plan"):
        net.test_mgmt_speed(slow, answers(speed=(0, "10000")))


@pytest.mark.parametrize(
    ("speed", "why"),
    [((0, "-1"), "does not report the link speed"), ((1, "cat: speed: Invalid argument"), "exited 1")],
)
def test_an_unknown_speed_is_an_error_never_a_pass(
    roce_node: NodeExpect, speed: tuple[int, str], why: str
) -> None:
    with pytest.raises(CheckError, match=why):
        net.test_mgmt_speed(roce_node, answers(speed=speed))


def test_mtu_and_operstate(roce_node: NodeExpect) -> None:
    with pytest.raises(CheckFailed, match=r"MTU: expected 1500; found 9000\. Fix: the OS installer"):
        net.test_mgmt_mtu(roce_node, answers(mtu="9000"))
    with pytest.raises(CheckFailed, match=r"operstate: expected up; found lowerlayerdown"):
        net.test_mgmt_up(roce_node, answers(state="lowerlayerdown"))


FIX = (
    "the OS installer's network config (netplan/NetworkManager/systemd-networkd) must route via 10.244.0.1 "
    "on mgmt0; clusterforge does not rewrite the management network it connects over"
)


@pytest.mark.parametrize(
    ("route", "found"),
    [
        (NO_ROUTE, "no default route"),
        (OTHER_GW, "default via 192.0.2.1 dev eth0"),
        (ECMP, "default via 10.244.0.1 dev mgmt0, via 192.168.7.1 dev eth9"),
        (LAB_ROUTE.replace('"dev":"mgmt0"', '"dev":"eth1"'), "default via 10.244.0.1 dev eth1"),
    ],
)
def test_a_default_route_elsewhere_fails_with_the_installer_fix(
    roce_node: NodeExpect, route: str, found: str
) -> None:
    with pytest.raises(CheckFailed) as exc:
        net.test_mgmt_default_route(roce_node, answers(route=route))
    assert (
        str(exc.value)
        == f"default route: expected default via 10.244.0.1 dev mgmt0; found {found}. Fix: {FIX}"
    )


def test_the_route_in_use_is_the_lowest_metric(roce_node: NodeExpect) -> None:
    net.test_mgmt_default_route(roce_node, answers(route=TWO_ROUTES))  # mgmt0 at metric 100 wins
    other = lab_node(roce_node, gateway="192.168.7.1", netdev="eth9")
    node = FakeNode({net.ROUTE: (0, TWO_ROUTES)})
    with pytest.raises(CheckFailed, match=r"found default via 10\.244\.0\.1 dev mgmt0 metric 100"):
        net.test_mgmt_default_route(other, node)


def test_no_declared_gateway_skips_the_route(roce_node: NodeExpect) -> None:
    with pytest.raises(pytest.skip.Exception, match="no gateway"):
        net.test_mgmt_default_route(lab_node(roce_node, gateway=None), FakeNode({}))


def test_a_plan_without_the_section_is_an_error_naming_the_fix(roce_node: NodeExpect) -> None:
    old = dict(roce_node.desired)
    del old["management"]
    node = replace(roce_node, desired_state=old)
    assert net.commands(node) == []
    with pytest.raises(CheckError, match="re-run `clusterforge plan`"):
        net.test_mgmt_up(node, answers())


def test_an_absent_management_netdev_is_a_measured_absence(roce_node: NodeExpect) -> None:
    """As on the lent H100 machine (2026-11-27: no `mgmt0`, its NIC is `eth0`): `cat` of each attribute
    exits 1 with coreutils' line; every check fails naming the absent netdev, none is an error."""
    base = "/sys/class/net/mgmt0"
    gone = FakeNode(
        {
            f"cat {base}/{f}": (1, "", f"cat: {base}/{f}: No such file or directory\n")
            for f in ("operstate", "mtu", "speed")
        }
    )
    for check in (net.test_mgmt_up, net.test_mgmt_mtu, net.test_mgmt_speed):
        with pytest.raises(CheckFailed) as exc:
            check(roce_node, gone)
        assert str(exc.value).startswith(
            "management netdev mgmt0: expected present; found absent (no /sys/class/net/mgmt0). "
            "Fix: the plan's"
        )
    unreadable = FakeNode({f"cat {base}/speed": (1, "", f"cat: {base}/speed: Invalid argument\n")})
    with pytest.raises(CheckError, match=r"exited 1: cat: .*Invalid argument"):  # present, unreadable: error
        net.test_mgmt_speed(roce_node, unreadable)
