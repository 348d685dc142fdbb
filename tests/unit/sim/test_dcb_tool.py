"""The simulated iproute2 ``dcb``: read back with the real parser, one NIC QoS state shared with mlnx_qos."""

from __future__ import annotations

from clusterforge.hw import dcb, mlnx_qos
from clusterforge.lab.sim import pkghook

from .conftest import SimNode

DEV = "enp24s0np0"


def test_pfc_set_and_show_in_both_formats(node: SimNode) -> None:
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == ()
    assert node.ok("dcb", "pfc", "set", "dev", DEV, "prio-pfc", "all:off", "3:on") == ""
    pfc = dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV))
    assert (pfc.pfc_cap, pfc.priorities) == (8, (3,))
    plain = node.ok("dcb", "pfc", "show", "dev", DEV)
    assert "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off" in plain
    # the same state mlnx_qos reads
    assert mlnx_qos.parse(node.ok("mlnx_qos", "-i", DEV)).pfc_priorities == (3,)


def test_app_entries_switch_trust_like_mlx5(node: SimNode) -> None:
    assert dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV)).dscp_prio == ()
    node.ok("dcb", "app", "add", "dev", DEV, "dscp-prio", "26:3", "CS6:6")
    app = dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV))
    assert app.dscp_prio == ((26, 3), (48, 6))
    assert node.ok("dcb", "app", "show", "dev", DEV, "dscp-prio").split() == ["dscp-prio", "AF31:3", "CS6:6"]
    assert node.ok("dcb", "-N", "app", "show", "dev", DEV).split() == ["dscp-prio", "26:3", "48:6"]
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", DEV))
    assert q.trust_state == "dscp" and q.prio_of_dscp(26) == 3 and q.prio_of_dscp(48) == 6
    node.ok("dcb", "app", "replace", "dev", DEV, "dscp-prio", "26:5")
    assert dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV)).prios_of_dscp(26) == (5,)
    node.ok("dcb", "app", "flush", "dev", DEV, "dscp-prio")
    assert mlnx_qos.parse(node.ok("mlnx_qos", "-i", DEV)).trust_state == "pcp"  # last DSCP entry gone


def test_mlnx_qos_dscp2prio_shows_in_the_app_table(node: SimNode) -> None:
    node.ok("mlnx_qos", "-i", DEV, "--dscp2prio", "set,26,3")
    assert dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV)).dscp_prio == ((26, 3),)


def test_lost_at_reboot_and_the_pfc_off_fault(node: SimNode) -> None:
    node.ok("dcb", "pfc", "set", "dev", DEV, "prio-pfc", "3:on")
    node.ok("dcb", "app", "add", "dev", DEV, "dscp-prio", "26:3")
    node.reboot()
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == ()
    assert dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV)).dscp_prio == ()
    node.ok("fault", "set", "pfc-off", "rail=0")
    node.ok("dcb", "pfc", "set", "dev", DEV, "prio-pfc", "3:on")
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == ()


def test_ets_show_and_set(node: SimNode) -> None:
    tsa = ["tc-tsa", "all:strict", "0:ets", "1:ets"]
    node.ok("dcb", "ets", "set", "dev", DEV, *tsa, "tc-bw", "0:50", "1:50")
    out = node.ok("dcb", "-j", "ets", "show", "dev", DEV)
    assert '"tc_bw":[50,50,0,0,0,0,0,0]' in out and '"tc_tsa":["ets","ets","strict"' in out


def test_errors_like_the_real_tool(node: SimNode, ibnode: SimNode) -> None:
    rc, _, err = node.run("dcb", "apptrust", "show", "dev", DEV)  # iproute2 6.1 has no apptrust
    assert rc != 0 and 'Object "apptrust" is unknown' in err
    rc, _, err = node.run("dcb", "pfc", "show", "dev", "mgmt0")
    assert rc != 0 and "Operation not supported" in err
    rc, _, err = ibnode.run("dcb", "pfc", "show", "dev", "ibp24s0")
    assert rc != 0
    rc, _, err = node.run("dcb", "pfc", "set", "dev", DEV, "prio-pfc", "9:on")
    assert rc != 0 and "0..7" in err
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == ()  # nothing changed


def test_dcb_is_hooked_with_iproute2() -> None:
    assert pkghook.DIVERTED["dcb"] == ("/sbin/dcb", "iproute2")
    assert pkghook.wanted({"iproute2"})["/sbin/dcb"] and not pkghook.wanted(set())["/sbin/dcb"]
