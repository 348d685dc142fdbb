"""Simulated ConnectX tools: parse with the real parsers; QoS and firmware settings follow real semantics."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from clusterforge.hw import (
    ibdev2netdev,
    ibstat,
    ibstatus,
    ibv_devinfo,
    mlnx_qos,
    mlxconfig,
    perftest,
    rdma_link,
)
from clusterforge.hw import show_gids as show_gids_parser

from .conftest import SimNode


def test_ib_node_ports(ibnode: SimNode) -> None:
    cas = ibstat.parse(ibnode.ok("ibstat"))
    assert [c.name for c in cas] == [f"mlx5_{i}" for i in range(8)]
    for ca in cas:
        port = ca.ports[0]
        assert (port.state, port.physical_state, port.rate_gbps, port.link_layer) == (
            "Active",
            "LinkUp",
            400,
            "InfiniBand",
        )
        assert ca.ca_type == "MT4129" and ca.firmware_version == "28.43.2026"
    devs = ibv_devinfo.parse(ibnode.ok("ibv_devinfo"))
    assert all(d.ports[0].link_layer == "InfiniBand" and d.ports[0].active_mtu == 4096 for d in devs)
    links = rdma_link.parse(ibnode.ok("rdma", "link", "show"))
    assert len(links) == 8 and all(lk.state == "ACTIVE" and lk.netdev and lk.lid for lk in links)
    st = ibstatus.parse(ibnode.ok("ibstatus"))
    assert [(p.state, p.rate_gbps, p.rate_desc) for p in st] == [("ACTIVE", 400, "4X NDR")] * 8
    assert ibnode.read("/sys/class/infiniband/mlx5_3/ports/1/rate").strip() == "400 Gb/sec (4X NDR)"
    assert ibnode.read("/sys/class/infiniband/mlx5_5/device/numa_node").strip() == "1"


def test_roce_node_ports_and_gids(node: SimNode, a100: SimNode) -> None:
    devs = ibv_devinfo.parse(node.ok("ibv_devinfo", "-d", "mlx5_2"))
    assert (
        len(devs) == 1 and devs[0].ports[0].link_layer == "Ethernet" and devs[0].ports[0].active_mtu == 4096
    )
    maps = ibdev2netdev.parse(node.ok("ibdev2netdev"))
    assert [(m.device, m.netdev, m.up) for m in maps][:2] == [
        ("mlx5_0", "enp24s0np0", True),
        ("mlx5_1", "enp64s0np0", True),
    ]
    gids = show_gids_parser.parse(node.ok("show_gids", "mlx5_0"))
    v2 = [g for g in gids if g.version == "v2" and g.ipv4]
    assert [(g.index, g.ipv4) for g in v2] == [(3, "10.245.0.11")]
    assert node.read("/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3").strip() == "RoCE v2"
    assert node.read("/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3").strip() == "enp24s0np0"
    cas = ibstat.parse(a100.ok("ibstat", "mlx5_1"))
    port = cas[0].ports[0]
    assert (port.rate_gbps, port.link_layer) == (200, "InfiniBand") and cas[0].ca_type == "MT4123"
    assert a100.read("/sys/class/infiniband/mlx5_1/ports/1/rate").strip() == "200 Gb/sec (4X HDR)"


def test_mlnx_qos_roundtrip_and_reset_at_boot(node: SimNode) -> None:
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp24s0np0"))
    assert q.trust_state == "pcp" and q.pfc_enabled == (False,) * 8
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp24s0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"))
    assert q.trust_state == "dscp" and q.pfc_enabled == (
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
    )
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp24s0np0"))  # persists (until reboot)
    assert q.trust_state == "dscp" and q.pfc_enabled[3] and q.dscp2prio[3] == tuple(range(31, 23, -1))
    assert mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp64s0np0")).trust_state == "pcp"
    node.reboot()
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp24s0np0"))
    assert q.trust_state == "pcp" and not any(q.pfc_enabled)  # NIC defaults again, like real hardware
    rc, _, _ = node.run("mlnx_qos", "-i", "mgmt0")
    assert rc != 0


def test_mlxconfig_pending_until_reboot(node: SimNode) -> None:
    def param(extended: bool, name: str) -> mlxconfig.MlxParam:
        args = ["mlxconfig", "-d", "mlx5_0"] + (["-e"] if extended else []) + ["q"]
        return mlxconfig.parse_query(node.ok(*args))[0].params[name]

    assert param(True, "ADVANCED_PCI_SETTINGS").current == "False(0)"
    out = node.ok(
        "mlxconfig", "-d", "0000:18:00.0", "-y", "set", "ADVANCED_PCI_SETTINGS=1", "ATS_ENABLED=True"
    )
    assert "Please reboot machine" in out
    p = param(True, "ADVANCED_PCI_SETTINGS")
    assert (p.current, p.next_boot, p.pending_change) == ("False(0)", "True(1)", True)
    assert param(False, "ATS_ENABLED").next_boot == "True(1)"  # plain q shows the next-boot value
    rc, out, _ = node.run("mlxconfig", "-d", "mlx5_1", "set", "SRIOV_EN=1", stdin="n\n")
    assert rc != 0 and "Aborted" in out
    node.reboot()
    p = param(True, "ADVANCED_PCI_SETTINGS")
    assert (p.current, p.next_boot, p.pending_change) == ("True(1)", "True(1)", False)
    assert param(False, "PCI_WR_ORDERING").next_boot == "per_mkey(0)"  # visible once advanced settings are on
    assert param(True, "LINK_TYPE_P1").current == "ETH(2)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tool(root: Path, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "CLUSTERFORGE_SIM_ROOT": str(root)}
    return subprocess.Popen(
        [sys.executable, "-m", "clusterforge.lab.sim", *argv],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _pair(server: SimNode, client: SimNode, tool: str, *args: str) -> tuple[str, str, int]:
    port = str(_free_port())
    srv = _tool(server.root, tool, "-d", "mlx5_1", "-p", port, *args)
    time.sleep(0.4)
    cli = _tool(client.root, tool, "-d", "mlx5_1", "-p", port, *args, "127.0.0.1")
    cout, cerr = cli.communicate(timeout=30)
    sout, _ = srv.communicate(timeout=30)
    return sout, cout + cerr, cli.returncode


def test_perftest_between_two_nodes(simroot: Path) -> None:
    a = SimNode(simroot / "a", "h100-sxm-8x400g-ib", "node-01")
    b = SimNode(simroot / "b", "h100-sxm-8x400g-ib", "node-02")
    sout, cout, rc = _pair(a, b, "ib_write_bw", "-s", "8388608", "--report_gbits", "-F")
    assert rc == 0, cout
    c, s = perftest.parse_bw(cout), perftest.parse_bw(sout)
    assert c.rows[-1].bw_average_gbps > 380 and c.header.link_type == "IB" and c.header.device == "mlx5_1"
    assert s.rows[-1].bw_average_gbps == c.rows[-1].bw_average_gbps  # both ends print the same result
    assert c.header.remote_lid == s.header.local_lid
    sout, cout, rc = _pair(a, b, "ib_write_lat", "-s", "2")
    assert rc == 0, cout
    lat = perftest.parse_lat(cout)
    assert 0.9 < lat.rows[0].t_typical < 1.5
    b.fault("slow-nic", rail=1)
    _, cout, rc = _pair(a, b, "ib_write_bw", "-s", "8388608", "--report_gbits")
    assert rc == 0 and perftest.parse_bw(cout).rows[-1].bw_average_gbps < 300
    a.fault("rail-down", rail=1)
    port = str(_free_port())
    p = _tool(a.root, "ib_write_bw", "-d", "mlx5_1", "-p", port)
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "state is Down" in err


def test_mlxfwmanager_query_reads_the_running_firmware(node: SimNode) -> None:
    """MFT's firmware query, parsed by the parser the nic_firmware check uses (tested on real captures):
    the NIC's running firmware and PSID, for one device by PCI address or for all; only --query exists."""
    from clusterforge.hw import mlxfwmanager

    one = mlxfwmanager.parse(node.ok("mlxfwmanager", "--query", "-d", "0000:18:00.0"))
    assert len(one) == 1
    state = node.state
    nic = next(n for n in state["nics"] if n["pci"] == "0000:18:00.0")
    assert (one[0].firmware, one[0].psid) == (nic["fw"], nic["board_id"])
    assert len(mlxfwmanager.parse(node.ok("mlxfwmanager", "--query"))) == len(state["nics"])
    rc, _, err = node.run("mlxfwmanager", "--query", "-d", "0000:99:00.0")
    assert rc != 0 and "Failed to open device" in err
    rc, _, err = node.run("mlxfwmanager", "-u", "-i", "fw.bin")
    assert rc != 0
