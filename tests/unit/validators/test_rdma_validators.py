"""RDMA validators on real captures: `ibstat` of 8x CX-7 NDR (tests/fixtures/real/
ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt, leptonai/gpud per SOURCES.md; its HCAs are mlx5_0,1,4-9) and
`mlnx_qos` with PFC on priority 3 (mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt)."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

rdma = validator("rdma")
IBSTAT = "ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt"
QOS = "mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt"


def test_port_active_at_rate(ib_node: NodeExpect) -> None:
    node = FakeNode({"ibstat": (0, real(IBSTAT))})
    rdma.test_hca(ib_node, node, 0)
    rdma.test_port(ib_node, node, 0)


def test_missing_hca_fails(ib_node: NodeExpect) -> None:
    with pytest.raises(CheckFailed, match=r"rail 2 HCA: expected mlx5_2 present; found absent .*Fix: reseat"):
        rdma.test_hca(ib_node, FakeNode({"ibstat": (0, real(IBSTAT))}), 2)


def test_half_rate_port_fails_with_link_fix(ib_node: NodeExpect) -> None:
    text = real(IBSTAT).replace("Rate: 400", "Rate: 200", 1)
    with pytest.raises(
        CheckFailed,
        match=r"expected Active/LinkUp 400 Gb/s InfiniBand; found Active/LinkUp "
        r"200 Gb/s InfiniBand. Fix: check the cable",
    ):
        rdma.test_port(ib_node, FakeNode({"ibstat": (0, text)}), 0)


def test_ibstat_panic_is_error(ib_node: NodeExpect) -> None:
    with pytest.raises(CheckError, match="ibpanic"):
        rdma.test_port(
            ib_node,
            FakeNode(
                {
                    "ibstat": (
                        0,
                        "ibpanic: [1234] main: stat of IB device 'mlx5_0' "
                        "failed: No such file or directory\n",
                    )
                }
            ),
            0,
        )


def test_roce_qos(roce_node: NodeExpect) -> None:
    netdev = roce_node.rail(0).netdev
    rdma.test_roce_qos(roce_node, FakeNode({f"mlnx_qos -i {netdev}": (0, real(QOS))}), 0)
    pfc_off = real(QOS).replace("enabled     0   0   0   1", "enabled     0   0   0   0", 1)
    with pytest.raises(
        CheckFailed,
        match=r"found trust dscp, PFC on \[\], 26->3 48->6. Fix: run `clusterforge "
        r"provision --tags roce_qos --limit roce-01` \(role rdma\)",
    ):
        rdma.test_roce_qos(roce_node, FakeNode({f"mlnx_qos -i {netdev}": (0, pfc_off)}), 0)


def test_netdev_and_mtu(roce_node: NodeExpect) -> None:
    r = roce_node.rail(1)
    base = {
        f"[ -e /sys/class/net/{r.netdev} ] && echo yes || echo no": (0, "yes\n"),
        f"cat /sys/class/net/{r.netdev}/operstate": (0, "up\n"),
        f"ip -o -4 addr show dev {r.netdev}": (0, f"5: {r.netdev}    inet {r.ip}/{r.prefix} scope global\n"),
    }
    rdma.test_netdev(roce_node, FakeNode({**base, f"cat /sys/class/net/{r.netdev}/mtu": (0, "9000\n")}), 1)
    with pytest.raises(CheckFailed, match=r"mtu 1500. Fix: run `clusterforge provision --tags network"):
        rdma.test_netdev(
            roce_node, FakeNode({**base, f"cat /sys/class/net/{r.netdev}/mtu": (0, "1500\n")}), 1
        )


def test_roce_gid(roce_node: NodeExpect) -> None:
    r = roce_node.rail(0)
    base = f"/sys/class/infiniband/{r.hca}/ports/1"
    assert rdma.roce_gid("10.245.0.11") == "0000:0000:0000:0000:0000:ffff:0af5:000b"
    node = roce_node.__class__(**{**roce_node.__dict__, "knobs": {"nccl_ib_gid_index": 3}})
    answers = {
        f"cat {base}/gids/3": (0, rdma.roce_gid(r.ip) + "\n"),
        f"cat {base}/gid_attrs/types/3": (0, "RoCE v2\n"),
        f"cat {base}/gid_attrs/ndevs/3 2>/dev/null || true": (0, r.netdev + "\n"),
    }
    rdma.test_roce_gid(node, FakeNode(answers), 0)
    with pytest.raises(CheckError, match="no configured RoCE GID index"):
        rdma.test_roce_gid(roce_node, FakeNode(answers), 0)


def test_error_counters(ib_node: NodeExpect) -> None:
    r = ib_node.rail(0)
    base = f"/sys/class/infiniband/{r.hca}/ports/1/counters"
    good = "\n".join(
        f"{base}/{c}:0" for c in ("symbol_error", "link_downed", "port_rcv_errors", "port_xmit_data")
    )
    cmd = f"grep -H -m1 '' {base}/*"
    hca = rdma.hca_cmd(r)
    rdma.test_error_counters(ib_node, FakeNode({hca: (0, "yes\n"), cmd: (0, good)}), 0)
    with pytest.raises(CheckFailed, match="symbol_error=5000"):
        rdma.test_error_counters(
            ib_node,
            FakeNode({hca: (0, "yes\n"), cmd: (0, good.replace("symbol_error:0", "symbol_error:5000"))}),
            0,
        )


def test_absent_hca_is_measured_not_an_error(ib_node: NodeExpect) -> None:
    """No /sys/class/infiniband/<hca> (seen on a real H100 VM whose NICs are not passed through): the
    kernel says the HCA is not there, so the rail's counters and NUMA checks fail naming it."""
    r = ib_node.rail(0)
    gone = FakeNode({rdma.hca_cmd(r): (0, "no\n")})
    with pytest.raises(CheckFailed, match=f"rail 0 HCA: expected {r.hca} present; found absent"):
        rdma.test_error_counters(ib_node, gone, 0)
    with pytest.raises(CheckFailed, match="HCA"):
        rdma.test_numa(ib_node, FakeNode({rdma.hca_cmd(r): (0, "no\n")}), 0)


def _inbox(node: NodeExpect) -> NodeExpect:
    """The same node on the inbox stack: QoS read with iproute2's dcb."""
    d = dict(node.desired_state, rdma={**node.desired_state["rdma"], "stack": "inbox", "qos_tool": "dcb"})
    return dataclasses.replace(node, desired_state=d)


# dcb JSON: PFC constructed from iproute2's print code (no public capture), the APP table as iproute2 6.1
# prints it; the real app capture (dcb-app-json__..., CS1/CS2 on a switch port) is the wrong mapping.
DCB_PFC3 = '{"pfc_cap":8,"delay":0,"prio_pfc":[false,false,false,true,false,false,false,false]}'
DCB_APP = '{"dscp_prio":[[26,3],[48,6]]}'
DCB_APP_REAL = "dcb-app-json__swp1-dscp-prio-cs1-cs2-netdev-idosch__1.txt"


def _dcb_answers(netdev: str, app: str, trust: str = "") -> dict[str, tuple[int, str]]:
    return {
        f"dcb -j pfc show dev {netdev}": (0, DCB_PFC3),
        f"dcb -j app show dev {netdev}": (0, app),
        f"dcb -j apptrust show dev {netdev} 2>/dev/null || true": (0, trust),
    }


def test_roce_qos_with_dcb(roce_node: NodeExpect) -> None:
    node, netdev = _inbox(roce_node), roce_node.rail(0).netdev
    rdma.test_roce_qos(node, FakeNode(_dcb_answers(netdev, DCB_APP)), 0)  # trust from the DSCP entries (mlx5)
    rdma.test_roce_qos(node, FakeNode(_dcb_answers(netdev, DCB_APP, '{"order":["dscp"]}')), 0)
    with pytest.raises(CheckFailed, match=r"found trust pcp, PFC on \[3\], 26->3 48->6"):
        rdma.test_roce_qos(node, FakeNode(_dcb_answers(netdev, DCB_APP, '{"order":["pcp"]}')), 0)
    with pytest.raises(
        CheckFailed, match=r"QoS \(dcb, rail 0\).*found trust dscp, PFC on \[3\], 26->unmapped"
    ):
        rdma.test_roce_qos(node, FakeNode(_dcb_answers(netdev, real(DCB_APP_REAL))), 0)


def test_roce_qos_without_dcb_is_an_error(roce_node: NodeExpect) -> None:
    with pytest.raises(CheckError):
        rdma.test_roce_qos(_inbox(roce_node), FakeNode({}), 0)


def _cnp_answers(node: NodeExpect, values: dict[str, str]) -> dict[str, tuple[int, str]]:
    return {cmd: (0, values.get(path, "absent") + "\n") for _, path, cmd in rdma.cnp_cmds(node, node.rail(0))}


def test_roce_cnp(roce_node: NodeExpect) -> None:
    netdev = roce_node.rail(0).netdev
    sysfs = f"/sys/class/net/{netdev}/ecn/roce_np/"
    ok = {sysfs + "cnp_dscp": "48", sysfs + "cnp_802p_prio": "6"}
    rdma.test_roce_cnp(roce_node, FakeNode(_cnp_answers(roce_node, ok)), 0)
    pci = roce_node.rail(0).pci
    debugfs = {f"/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_dscp": "48"}
    debugfs[f"/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_prio"] = "6"
    rdma.test_roce_cnp(roce_node, FakeNode(_cnp_answers(roce_node, debugfs)), 0)  # the upstream mlx5 place
    with pytest.raises(
        CheckFailed, match=r"expected dscp 48, 802.1p priority 6; found dscp 48, 802.1p priority 0"
    ):
        rdma.test_roce_cnp(
            roce_node, FakeNode(_cnp_answers(roce_node, {**ok, sysfs + "cnp_802p_prio": "0"})), 0
        )
    with pytest.raises(CheckError, match=r"cannot certify the CNP settings: no file for cnp_priority"):
        rdma.test_roce_cnp(roce_node, FakeNode(_cnp_answers(roce_node, {sysfs + "cnp_dscp": "48"})), 0)
