"""ibstat / ibstatus / ibv_devinfo / ibdev2netdev / rdma link / show_gids on every matching real capture
(sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError, ibdev2netdev, ibstat, ibstatus, ibv_devinfo, rdma_link, show_gids

from .conftest import head

Real = Callable[[str], str]


# --------------------------------------------------------------------------------------------- ibstat
def test_ibstat_h100_roce_all_active_tabs(real: Real) -> None:
    """ibstat__h100-cx7-roce400-cx6dx-eth-allactive-gpud__1.txt - leptonai/gpud:
    pkg/nvidia-query/infiniband/testdata/ibstat.47.0.h100.all.active.0 @f7661b0a; tab-indented, no final
    newline."""
    cas = ibstat.parse(real("ibstat__h100-cx7-roce400-cx6dx-eth-allactive-gpud__1.txt"))
    assert [c.name for c in cas][:3] == ["mlx5_0", "mlx5_1", "mlx5_10"] and len(cas) == 12
    c0 = cas[0]
    assert (c0.ca_type, c0.firmware_version, c0.node_guid, c0.num_ports) == (
        "MT4129",
        "28.39.1002",
        "0xa088c20300e3142a",
        1,
    )
    p = c0.ports[0]
    assert (p.state, p.physical_state, p.rate_gbps, p.link_layer) == ("Active", "LinkUp", 400.0, "Ethernet")
    assert (p.base_lid, p.sm_lid, p.capability_mask) == (0, 0, "0x00010000")
    assert cas[1].ports[0].port_guid == "0x0000000000000000" and cas[1].ca_type == "MT4125"
    assert {c.ports[0].state for c in cas} == {"Active"}


def test_ibstat_h100_ib_some_down(real: Real) -> None:
    """ibstat__h100-cx7-ib400-cx6dx-eth-somedown-gpud__2.txt - gpud testdata ibstat.47.0.h100.some.down.0
    @f7661b0a:
    IB NDR ports (SM lid 334) plus CX-6 Dx Ethernet ports, three of them Down/Disabled at rate 40."""
    cas = {c.name: c for c in ibstat.parse(real("ibstat__h100-cx7-ib400-cx6dx-eth-somedown-gpud__2.txt"))}
    down = sorted(n for n, c in cas.items() if c.ports[0].state == "Down")
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    assert cas["mlx5_2"].ports[0].physical_state == "Disabled" and cas["mlx5_2"].ports[0].rate_gbps == 40.0
    ib = cas["mlx5_0"].ports[0]
    assert (ib.link_layer, ib.base_lid, ib.sm_lid, ib.rate_gbps) == ("InfiniBand", 75, 334, 400.0)
    assert cas["mlx5_1"].firmware_version == "22.38.1002"


def test_ibstat_h100_ib400x8_space_indent(real: Real) -> None:
    """ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt - gpud testdata ibstat.47.0.h100.all.active.2 @f7661b0a;
    8/16-space indentation; BlueField bond ``mlx5_bond_0`` Ethernet 200."""
    cas = ibstat.parse(real("ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt"))
    assert len(cas) == 9 and cas[-1].name == "mlx5_bond_0" and cas[-1].ca_type == "MT41692"
    assert cas[-1].ports[0].rate_gbps == 200.0 and cas[-1].hardware_version == "1"
    assert [c.ports[0].base_lid for c in cas[:3]] == [128, 534, 972] and cas[
        0
    ].firmware_version == "28.41.1000"


def test_ibstat_cx3_and_cx4_vpi(real: Real) -> None:
    """ibstat__cx3-mlx4-oyanghd__1.txt (oyanghd/gpu-compress-decompress docs/project_description_EN.md lines
    216-232
    @6ce00a5e) and ibstat__cx4-vpi-mt4115-eth-active-ib-port-disabled-hurray0__8.txt (Hurray0/rdma_test
    README.md
    @24d9c2d1): mlx4 FDR 56; CX-4 VPI with one Ethernet and one disabled IB port."""
    [cx3] = ibstat.parse(real("ibstat__cx3-mlx4-oyanghd__1.txt"))
    assert (cx3.name, cx3.ca_type, cx3.firmware_version, cx3.ports[0].rate_gbps) == (
        "mlx4_0",
        "MT4099",
        "2.42.5000",
        56.0,
    )
    assert cx3.ports[0].capability_mask == "0x0251486a" and cx3.system_image_guid == "0x98039b0300dccab3"
    eth, ib = ibstat.parse(real("ibstat__cx4-vpi-mt4115-eth-active-ib-port-disabled-hurray0__8.txt"))
    assert (eth.ports[0].link_layer, eth.ports[0].state, eth.ports[0].rate_gbps) == (
        "Ethernet",
        "Active",
        100.0,
    )
    assert (ib.ports[0].link_layer, ib.ports[0].state, ib.ports[0].physical_state) == (
        "InfiniBand",
        "Down",
        "Disabled",
    )
    assert (ib.ports[0].base_lid, ib.ports[0].sm_lid) == (2, 1)


def test_ibstat_ibpanic(real: Real) -> None:
    """ibstat__a100-azure-cx6vf-hdr-ibpanic-gpud__5.txt - gpud testdata
    ibstat.39.0.a100.failed.ibpanic.exit-255.0
    @f7661b0a. FAILURE tail ``ibpanic: ... stat of IB device 'mlx5_8' failed``: ``parse`` raises (listing is
    incomplete), ``parse_report`` returns the 8 CAs printed before the panic plus the error line."""
    text = real("ibstat__a100-azure-cx6vf-hdr-ibpanic-gpud__5.txt")
    with pytest.raises(ParseError, match="ibpanic"):
        ibstat.parse(text)
    report = ibstat.parse_report(text)
    assert len(report.cas) == 8 and report.errors[0].startswith(
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8'"
    )
    assert report.cas[0].ports[0].base_lid == 13247 and report.cas[7].node_guid == "0x00155dfffe3411f2"
    assert {c.ports[0].rate_gbps for c in report.cas} == {200.0}


def test_ibstat_truncated_and_garbage(real: Real) -> None:
    text = real("ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt")
    with pytest.raises(ParseError, match="lacks"):
        ibstat.parse(head(text, 12))  # port block cut after "Base lid"
    with pytest.raises(ParseError, match="says 1 ports but lists 0"):
        ibstat.parse(head(text, 7))
    for garbage in ("", "hello\n", "CA 'mlx5_0'\n\tBogus key: 1\n"):
        with pytest.raises(ParseError):
            ibstat.parse(garbage)


# -------------------------------------------------------------------------------------------- ibstatus
def test_ibstatus_azure_hdr(real: Real) -> None:
    """ibstatus__a100-azure-hdr-gpud__1.txt - gpud testdata ibstatus.39.0.a100.all.active.0 @30c8b706."""
    ports = ibstatus.parse(real("ibstatus__a100-azure-hdr-gpud__1.txt"))
    assert len(ports) == 9
    p0 = ports[0]
    assert (p0.device, p0.port, p0.base_lid, p0.sm_lid) == ("mlx5_0", 1, 0x33BF, 1)
    assert (p0.state, p0.state_code, p0.phys_state, p0.phys_state_code) == ("ACTIVE", 4, "LinkUp", 5)
    assert (p0.rate_gbps, p0.rate_desc, p0.link_layer) == (200.0, "4X HDR", "InfiniBand")
    assert p0.default_gid == "fe80:0000:0000:0000:0015:5dff:fd34:11eb"
    eth = ports[8]
    assert (eth.device, eth.default_gid, eth.rate_gbps, eth.rate_desc, eth.link_layer) == (
        "mlx5_8", None, 40.0, "4X QDR", "Ethernet")  # fmt: skip
    with pytest.raises(ParseError, match="lacks"):
        ibstatus.parse(head(real("ibstatus__a100-azure-hdr-gpud__1.txt"), 5))
    with pytest.raises(ParseError):
        ibstatus.parse("state: 4: ACTIVE\n")


# ------------------------------------------------------------------------------------------ ibv_devinfo
def test_ibv_devinfo_mofed44_spaces(real: Real) -> None:
    """ibv_devinfo__cx5-roce-mlx5_0-mofed44-k8s-pod-asdfsx__3.txt - code-index file id 47438530947; MOFED 4.4
    layout (spaces, ``Device ports:`` line), active_mtu 1024."""
    [dev] = ibv_devinfo.parse(real("ibv_devinfo__cx5-roce-mlx5_0-mofed44-k8s-pod-asdfsx__3.txt"))
    assert (dev.hca_id, dev.transport, dev.transport_code, dev.fw_ver) == (
        "mlx5_0",
        "InfiniBand",
        0,
        "16.23.1020",
    )
    assert (dev.vendor_part_id, dev.board_id, dev.phys_port_cnt, dev.node_guid) == (
        4119,
        "MT_0000000011",
        1,
        "506b:4b03:0028:4ddc",
    )
    p = dev.ports[0]
    assert (p.state, p.state_code, p.max_mtu, p.active_mtu, p.link_layer) == (
        "PORT_ACTIVE",
        4,
        4096,
        1024,
        "Ethernet",
    )


def test_ibv_devinfo_cx7_roce_tabs(real: Real) -> None:
    """ibv_devinfo__h100-cx7-roce-mlx5_0-slurmv4__2.txt - devopsrustem/slurmv4: 3/8.sh lines 573-590
    @3e72c525."""
    [dev] = ibv_devinfo.parse(real("ibv_devinfo__h100-cx7-roce-mlx5_0-slurmv4__2.txt"))
    assert (dev.fw_ver, dev.board_id, dev.vendor_id, dev.sys_image_guid) == (
        "28.43.2026",
        "MT_0000000838",
        "0x02c9",
        "a088:c203:0063:5a20",
    )
    assert dev.ports[0].active_mtu == 4096 and dev.ports[0].port_lmc == "0x00" and dev.ports[0].gids == ()


def test_ibv_devinfo_dell_8hca_ib(real: Real) -> None:
    """ibv_devinfo__h100x8-dell-8hca-cx7-ib-deepep397__4.txt -
    https://github.com/deepseek-ai/DeepEP/issues/397
    (akhoroshev); 8 of the 12 HCAs listed (possibly filtered by the author)."""
    devs = ibv_devinfo.parse(real("ibv_devinfo__h100x8-dell-8hca-cx7-ib-deepep397__4.txt"))
    assert [d.hca_id for d in devs] == [
        "mlx5_0",
        "mlx5_3",
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
        "mlx5_9",
        "mlx5_10",
        "mlx5_11",
    ]
    assert {d.board_id for d in devs} == {"DEL0000000036"} and {d.ports[0].sm_lid for d in devs} == {5790}
    assert [d.ports[0].port_lid for d in devs] == [3697, 3705, 3714, 3713, 3719, 3732, 3726, 3735]
    assert {d.ports[0].link_layer for d in devs} == {"InfiniBand"}


def test_ibv_devinfo_verbose_gids_and_errors(real: Real) -> None:
    text = (
        "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.1002\n\tnode_guid:\t\t\t"
        "a088:c203:00e3:142a\n"
        "\tsys_image_guid:\t\t\ta088:c203:00e3:142a\n\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4129\n"
        "\thw_ver:\t\t\t\t0x0\n\tboard_id:\t\t\tMT_0000000838\n\tphys_port_cnt:\t\t\t1\n\tmax_mr_size:\t\t"
        "\t0xffffffffffffffff\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t"
        "4096 (5)\n"
        "\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet\n"
        "\t\t\tactive_speed:\t\t100 Gbps (128)\n\t\t\tGID[  0]:\t\tfe80::a288:c2ff:fee3:142a, RoCE v1\n"
        "\t\t\tGID[  3]:\t\t::ffff:10.0.0.7, RoCE v2\n"
    )
    flags = "\tdevice_cap_flags:\t\t0x21361c36\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n"
    text = text.replace("\t\tport:\t1\n", flags + "\t\tport:\t1\n")
    [dev] = ibv_devinfo.parse(text)
    assert dev.extra["device_cap_flags"] == "0x21361c36 BAD_PKEY_CNTR BAD_QKEY_CNTR"
    assert (
        dev.extra["max_mr_size"] == "0xffffffffffffffff"
        and dev.ports[0].extra["active_speed"] == "100 Gbps (128)"
    )
    assert [(g.index, g.gid, g.type) for g in dev.ports[0].gids] == [
        (0, "fe80::a288:c2ff:fee3:142a", "RoCE v1"), (3, "::ffff:10.0.0.7", "RoCE v2")]  # fmt: skip
    with pytest.raises(ParseError, match="lacks"):
        ibv_devinfo.parse(head(real("ibv_devinfo__h100-cx7-roce-mlx5_0-slurmv4__2.txt"), 14))
    with pytest.raises(ParseError, match="phys_port_cnt"):
        ibv_devinfo.parse(head(real("ibv_devinfo__h100-cx7-roce-mlx5_0-slurmv4__2.txt"), 10))
    for garbage in ("", "No IB devices found\n", "foo: bar\n"):
        with pytest.raises(ParseError):
            ibv_devinfo.parse(garbage)


# ----------------------------------------------------------------------------------------- ibdev2netdev
def test_ibdev2netdev_fixtures(real: Real) -> None:
    """ibdev2netdev__cx5-roce-2port-daocloud__5.txt (DaoCloud/DaoCloud-docs ofed_driver.md @157605e0),
    ibdev2netdev__h100-12nic-roce-bond-aihub0007-slurmv4__3.txt (devopsrustem/slurmv4 3/12.sh lines 960-971),
    ibdev2netdev__h100-12nic-roce-bond-aihub0009-slurmv4__4.txt (same file lines 1069-1080) and
    ibdev2netdev__h100-azure-ndv5-ibup-alizeechen__2.txt (SOURCES.md: "same file (lines 98-106)" -
    AlizeeChen11 notes)."""
    two = ibdev2netdev.parse(real("ibdev2netdev__cx5-roce-2port-daocloud__5.txt"))
    assert [(e.device, e.port, e.netdev, e.up) for e in two] == [
        ("mlx5_0", 1, "enp4s0f0np0", True), ("mlx5_1", 1, "enp4s0f1np1", True)]  # fmt: skip
    a7 = ibdev2netdev.parse(real("ibdev2netdev__h100-12nic-roce-bond-aihub0007-slurmv4__3.txt"))
    assert len(a7) == 12 and [e.device for e in a7 if not e.up] == ["mlx5_10", "mlx5_4"]
    assert [e.device for e in a7 if e.netdev == "bond0"] == ["mlx5_3", "mlx5_9"]
    a9 = ibdev2netdev.parse(real("ibdev2netdev__h100-12nic-roce-bond-aihub0009-slurmv4__4.txt"))
    assert [e.netdev for e in a9 if not e.up] == ["ens12f1np1", "ens20f1np1"] and a9[0].netdev == "ens108np0"
    az = ibdev2netdev.parse(real("ibdev2netdev__h100-azure-ndv5-ibup-alizeechen__2.txt"))
    assert (
        az[0].device == "mlx5_an0"
        and az[0].netdev == "eth1"
        and [e.netdev for e in az[1:]] == [f"ib{i}" for i in range(8)]
    )
    assert all(e.up for e in az)


def test_ibdev2netdev_verbose_and_errors() -> None:
    line = (
        "0000:0c:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card fw 20.31.1014 port 1 "
        "(ACTIVE) ==> ib0 (Up)\n"
    )
    [e] = ibdev2netdev.parse(line)
    assert (e.pci_address, e.device, e.port_state, e.netdev, e.up) == (
        "0000:0c:00.0",
        "mlx5_0",
        "ACTIVE",
        "ib0",
        True,
    )
    for garbage in (
        "",
        "mlx5_0 port 1 ==> ib0\n",
        "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_0 port 1 ==> ib1 (Up)\n",
        "mlx5_0 port 1 ==> ib0 (U",
    ):
        with pytest.raises(ParseError):
            ibdev2netdev.parse(garbage)


# ------------------------------------------------------------------------------------------- rdma link
def test_rdma_link_fixtures(real: Real) -> None:
    """rdma-link__cx5-roce-netdev-daocloud__2.txt (DaoCloud/DaoCloud-docs ofed_driver.md @157605e0),
    rdma-link__ib-2port-active-plus-down-polling-ibp195s0-strixnote__3.txt (code-index id 62206205377,
    trailing
    spaces) and rdma-link__mlx5-ib-ipoib-netdev-wrapped-lkml2023__4.txt (linux-rdma patch by Kamal Heib, 2023:
    attributes wrapped onto a tab-indented second line)."""
    roce = rdma_link.parse(real("rdma-link__cx5-roce-netdev-daocloud__2.txt"))
    assert [(r.device, r.port, r.state, r.physical_state, r.netdev) for r in roce] == [
        ("mlx5_0", 1, "ACTIVE", "LINK_UP", "enp4s0f0np0"),
        ("mlx5_1", 1, "ACTIVE", "LINK_UP", "enp4s0f1np1"),
    ]
    assert roce[0].lid is None and roce[0].subnet_prefix is None
    up, down = rdma_link.parse(real("rdma-link__ib-2port-active-plus-down-polling-ibp195s0-strixnote__3.txt"))
    assert (up.port, up.lid, up.sm_lid, up.lmc, up.state) == (1, 2, 1, 0, "ACTIVE")
    assert (down.port, down.state, down.physical_state, down.netdev) == (2, "DOWN", "POLLING", "ibp195s0d1")
    [wrapped] = rdma_link.parse(real("rdma-link__mlx5-ib-ipoib-netdev-wrapped-lkml2023__4.txt"))
    assert (wrapped.lid, wrapped.sm_lid, wrapped.state, wrapped.netdev) == (66, 3, "ACTIVE", "ibp196s0f0")
    assert wrapped.subnet_prefix == "fe80:0000:0000:0000"


def test_rdma_link_truncated_and_garbage(real: Real) -> None:
    with pytest.raises(ParseError, match="state"):
        rdma_link.parse(
            head(real("rdma-link__mlx5-ib-ipoib-netdev-wrapped-lkml2023__4.txt"), 1)
        )  # wrap line lost
    for garbage in ("", "hello\n", "link mlx5_0/1 state SLEEPY physical_state LINK_UP\n", "\tstate ACTIVE\n"):
        with pytest.raises(ParseError):
            rdma_link.parse(garbage)


# ------------------------------------------------------------------------------------------- show_gids
def test_show_gids_fixtures(real: Real) -> None:
    """show_gids__h100-cx7-roce-mlx5_0-slurmv4__1.txt (devopsrustem/slurmv4 lines 565-571 @3e72c525),
    show_gids__roce-rdma0-husky__2.txt (host-bench/husky README.md lines 74-80 @a665c9dd),
    show_gids__cx4-vpi-eth-plus-ib-port-hurray0__4.txt (Hurray0/rdma_test README.md, space-aligned) and
    show_gids__huawei-hrn3-bond-plus-mlx5-bond-linklocal-only-cnnote__6.txt (code-index note, hiroce3 + mlx5
    bond)."""
    cx7 = show_gids.parse(real("show_gids__h100-cx7-roce-mlx5_0-slurmv4__1.txt"))
    assert [(g.index, g.ipv4, g.version) for g in cx7] == [
        (0, None, "v1"), (1, None, "v2"), (2, "10.99.91.39", "v1"), (3, "10.99.91.39", "v2")]  # fmt: skip
    assert cx7[3].gid == "0000:0000:0000:0000:0000:ffff:0a63:5b27" and cx7[3].netdev == "ens108np0"
    assert cx7[0].is_link_local and not cx7[2].is_link_local
    husky = show_gids.parse(real("show_gids__roce-rdma0-husky__2.txt"))
    assert husky[3].ipv4 == "192.168.211.242" and {g.netdev for g in husky} == {"rdma0"}
    vpi = show_gids.parse(real("show_gids__cx4-vpi-eth-plus-ib-port-hurray0__4.txt"))
    assert [(g.device, g.version, g.netdev) for g in vpi] == [
        ("mlx5_0", "v1", "ens11f0"), ("mlx5_0", "v2", "ens11f0"), ("mlx5_1", "v1", None)]  # fmt: skip
    mixed = show_gids.parse(real("show_gids__huawei-hrn3-bond-plus-mlx5-bond-linklocal-only-cnnote__6.txt"))
    assert mixed[1].device == "hrn3_bond_0" and mixed[1].ipv4 == "27.105.180.3"
    assert [g.ipv4 for g in mixed if g.device == "mlx5_bond_0"] == [None, None]  # link-local only


def test_show_gids_truncated_and_garbage(real: Real) -> None:
    text = real("show_gids__roce-rdma0-husky__2.txt")
    with pytest.raises(ParseError, match="n_gids_found"):
        show_gids.parse(head(text, 4))
    with pytest.raises(ParseError, match="n_gids_found=4 but 2 rows"):
        show_gids.parse(head(text, 4) + "n_gids_found=4\n")
    for garbage in ("", "DEV PORT\n", text.replace("v2\trdma0", "v9\trdma0")):
        with pytest.raises(ParseError):
            show_gids.parse(garbage)
