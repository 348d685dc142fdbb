"""LLDP and InfiniBand discovery parsers on real captures (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import json

import pytest

from clusterforge.hw import ParseError, iblinkinfo, ibmad, ibnetdiscover, lldp

from .conftest import head, read_real

LLDP_TEXT = "lldpctl__sonic-dut-juniper-arista-cisco8000-agg-unknown-tlv-testplan__1.txt"
LLDP_JSON0 = "lldpcli-json0__gpu-node-5-rails-sonic-ds730-leafs-unifabric__2.txt"
IBNET = "ibnetdiscover__dgx-superpod-ndr-qm9701-40sw-582ca-topograph__1.txt"
IBNET_P = "ibnetdiscover-p__edr-osc-ports-report-unconnected-osc-exporter__1.txt"
LINK_EDR = "iblinkinfo__edr-sb7700-2node-hpl-truncated-xcat-notes__1.txt"
LINK_QDR = "iblinkinfo__qdr-infiniscale-iv-36port-4hosts-whitespace-cnnote__2.txt"
NODEINFO_1 = "smpquery-nodeinfo__cx3-fdr-dualport-lid4-port1-ompi-users__1.txt"
NODEINFO_2 = "smpquery-nodeinfo__cx3-fdr-dualport-lid5-port2-ompi-users__2.txt"
SMP_FAILED = "smpquery-failed__cx3-fdr-lid4-after-cable-pull-ompi-users__3.txt"
PORTSTATE = "ibportstate__cx3-fdr-lid6-reset-initial-and-after-set-1x-ltyinhust__1.txt"


def test_lldpctl_plain_text_neighbours() -> None:
    n = lldp.parse(read_real(LLDP_TEXT))
    assert [x.interface for x in n] == ["eth0", "Ethernet3", "Ethernet2", "Ethernet2", "Ethernet2"]
    assert n[0].sysname == "STR-22EX-219-A06" and n[0].port_id_type == "local" and n[0].port == "588"
    assert n[0].port_descr == "ge-0/0/38.0" and n[0].ttl == 90 and n[0].chassis_id == "f4:b5:2f:56:85:40"
    assert n[1].port == "Ethernet5/35/1" and n[1].mgmt_ips == ("10.3.151.63",)
    assert n[2].mgmt_ips == ("10.3.151.82", "2a01:111:e210:b::159:80")
    assert n[4].sysname == "Device1(SONiC).network.microsoft.com" and n[4].via == "LLDP"


def test_lldpctl_plain_text_cut_block() -> None:
    text = head(read_real(LLDP_TEXT), 38)  # the Arista block stops before its Port: section
    with pytest.raises(ParseError, match="PortID"):
        lldp.parse(text)
    assert [x.interface for x in lldp.parse(text, partial=True)] == ["eth0"]


def test_lldpcli_json0_rail_neighbours() -> None:
    n = lldp.parse(read_real(LLDP_JSON0))
    got = {x.interface: (x.sysname, x.port) for x in n}
    assert got == {
        "ens1np0": ("StorageSW", "Ethernet120"),
        "ens841np0": ("LEAF03", "Ethernet184"),
        "ens842np0": ("LEAF04", "Ethernet184"),
        "ens110np0": ("LEAF02", "Ethernet184"),
        "ens108np0": ("LEAF01", "Ethernet184"),
    }
    assert n[0].chassis_id == "70:06:92:6e:32:64" and n[0].mgmt_ips == ("10.193.77.211",) and n[0].ttl == 120


def test_lldpctl_json_keyed_layout_same_result() -> None:
    """`-f json` keys interfaces and chassis by name; rebuilt here from the json0 capture's values."""
    n0 = lldp.parse(read_real(LLDP_JSON0))
    doc = {
        "lldp": {
            "interface": [
                {
                    x.interface: {
                        "via": x.via,
                        "chassis": {x.sysname: {"id": {"type": x.chassis_id_type, "value": x.chassis_id}}},
                        "port": {"id": {"type": x.port_id_type, "value": x.port_id}, "ttl": str(x.ttl)},
                    }
                }
                for x in n0
            ]
        }
    }
    n = lldp.parse(json.dumps(doc))
    assert [(x.interface, x.sysname, x.port, x.ttl) for x in n] == [
        (x.interface, x.sysname, x.port, x.ttl) for x in n0
    ]
    assert lldp.parse('{"lldp": {}}') == ()


def test_lldp_json_cut_is_an_error() -> None:
    with pytest.raises(ParseError, match="JSON"):
        lldp.parse(read_real(LLDP_JSON0)[:5000], partial=True)


def test_ibnetdiscover_superpod_fabric() -> None:
    t = ibnetdiscover.parse(read_real(IBNET))
    kinds = [n.kind for n in t.nodes]
    assert kinds.count("switch") == 40 and kinds.count("ca") == 582
    assert len(t.links) == 1114  # 2228 port lines, each cable seen from both ends
    assert {(lk.width, lk.speed) for lk in t.links} == {("4x", "NDR")}
    by = t.by_guid()
    leaf = by["0x2c5eab0300b87b40"]
    assert leaf.description == "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1" and leaf.lid == 73 and leaf.ports == 65
    ca = by["0xe09d7303007a4bd8"]
    assert ca.description == "a08-p1-dgx-04-c01 mlx5_5" and ca.devid == "0x1021" and ca.lid == 647
    assert any(
        {(lk.a_guid, lk.a_port), (lk.b_guid, lk.b_port)}
        == {("0x2c5eab0300b87b40", 1), ("0xe09d7303007a4bd8", 1)}
        for lk in t.links
    )


def test_ibnetdiscover_cut_output() -> None:
    text = head(read_real(IBNET), 30)
    with pytest.raises(ParseError, match="no block"):
        ibnetdiscover.parse(text)
    part = ibnetdiscover.parse(text, partial=True)
    assert len(part.nodes) == 1 and part.links == ()


def test_ibnetdiscover_ports_report() -> None:
    recs = ibnetdiscover.parse_ports(read_real(IBNET_P))
    assert len(recs) == 9
    first = recs[0]
    assert (first.local.kind, first.local.lid, first.local.name, first.width, first.speed) == (
        "ca",
        134,
        "o0001 HCA-1",
        "4x",
        "EDR",
    )
    assert first.peer is not None and (first.peer.name, first.peer.port, first.peer.guid) == (
        "ib-i1l1s01",
        10,
        "0x7cfe9003009ce5b0",
    )
    down = [r for r in recs if r.peer is None]
    assert [(r.local.name, r.local.port, r.speed) for r in down] == [
        ("ib-i4l1s01", 37, "???"),
        ("ib-i7l2s01", 80, "SDR"),
    ]
    with pytest.raises(ParseError):
        ibnetdiscover.parse_ports(read_real(IBNET_P).replace("4x EDR - SW  1719 10", "4x EDR - SW"))


def test_iblinkinfo_edr_and_qdr() -> None:
    nodes = iblinkinfo.parse(read_real(LINK_EDR))
    assert [(n.kind, n.description) for n in nodes] == [
        ("ca", "n02 HCA-1"),
        ("ca", "mgt mlx5_0"),
        ("switch", "MF0;SB7700:MSB7700/U1"),
    ]
    assert nodes[0].guid == "0xec0d9a03003d62be"
    p = nodes[0].ports[0]
    assert (p.lid, p.port, p.width, p.lane_gbps, p.state, p.peer_lid, p.peer_port, p.peer) == (
        4,
        1,
        "4X",
        25.78125,
        "Active",
        2,
        17,
        "MF0;SB7700:MSB7700/U1",
    )
    sw = nodes[2]
    assert len(sw.ports) == 18 and sw.ports[0].state == "Down" and sw.ports[0].phys_state == "Polling"
    assert sw.ports[0].peer == "" and sw.ports[0].peer_port is None
    assert (sw.ports[17].peer, sw.ports[17].peer_port) == ("n01 HCA-1", 1)
    qdr = iblinkinfo.parse(read_real(LINK_QDR))
    assert len(qdr) == 5 and len(qdr[4].ports) == 36
    assert qdr[0].ports[0].lane_gbps == 10.0 and qdr[0].ports[0].phys_state == "LinkUp"
    assert sum(1 for p in qdr[4].ports if p.state == "Active") == 4


def test_iblinkinfo_cut_line() -> None:
    text = read_real(LINK_EDR).rstrip("\n")[:-30]
    with pytest.raises(ParseError):
        iblinkinfo.parse(text)
    assert len(iblinkinfo.parse(text, partial=True)[2].ports) == 17


def test_smpquery_nodeinfo_dual_port_hca() -> None:
    a, b = ibmad.parse_nodeinfo(read_real(NODEINFO_1)), ibmad.parse_nodeinfo(read_real(NODEINFO_2))
    assert (a.lid, a.node_type, a.num_ports, a.local_port, a.device_id) == (
        4,
        "Channel Adapter",
        2,
        1,
        "0x1003",
    )
    assert a.node_guid == b.node_guid == "0x0002c90300336fe0"
    assert (a.port_guid, b.port_guid, b.local_port) == ("0x0002c90300336fe1", "0x0002c90300336fe2", 2)


def test_smpquery_unanswered_query() -> None:
    f = ibmad.parse_query_failed(read_real(SMP_FAILED))
    assert f == ibmad.QueryFailed("smpquery", "NodeInfo", "node info query failed", "Lid 4")
    stdout_only = read_real(SMP_FAILED).splitlines()[1]
    assert ibmad.parse_query_failed(stdout_only).route == ""
    for other in (
        "smpquery: iberror: failed: Failed to open 'mlx5_9' port '1'\n",
        read_real(NODEINFO_1),
    ):
        with pytest.raises(ParseError):
            ibmad.parse_query_failed(other)


def test_ibportstate_before_and_after() -> None:
    before, after = ibmad.parse_portinfo(read_real(PORTSTATE))
    assert before.label == "Initial CA/RT PortInfo" and after.label == "After PortInfo set"
    assert (before.lid, before.port, before.width_active, before.link_state) == (6, 1, "1X", "Active")
    assert before.speed_name == "FDR" and after.speed_active == "Extended speed" and after.speed_name == "FDR"


def test_ibmad_block_without_fields() -> None:
    with pytest.raises(ParseError, match="no fields"):
        ibmad.parse_nodeinfo("# Node info: Lid 4\n")
