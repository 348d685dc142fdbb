"""Link-health and congestion counter parsers on real captures (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError, ibmad, ibqueryerrors, nic_counters

from .conftest import read_real

PQ_SWITCH = "perfquery-x__edr-switch-lid1719-2ports-xmitwait-osc-exporter__1.txt"
PQ_HCA = "perfquery-x__edr-hca-lid134-capmask5a00-osc-exporter__2.txt"
PQ_E = "perfquery-E__edr-switch-lid2052-rcverrdetails-osc-exporter__1.txt"
IBQE = "ibqueryerrors__cx7-port-all-human-suffix-values-ucx9590__excerpt2.txt"
ETH_DISC = "ethtool-S__cx4-lx-25g-mlx5-discards-grep-prio-discards-cnnote__excerpt2.txt"
ETH_PAUSE = "ethtool-S__cx4-lx-25g-mlx5-pause-pci-grep-tx-global-pause-cnnote__excerpt1.txt"
RDMA_4 = "rdma-statistic__mlnx-iproute2-4x-mlx5-roce-out-of-buffer-cqe-errors-cnnote__1.txt"
RDMA_BOND = "rdma-statistic__mlx5-bond0-roce-lag-resp-cqe-errors-cnnote__2.txt"
HW_LS = "hw-counters-ls__mlx5-bond0-hw_counters-dir-listing-cnnote__2.txt"


def test_perfquery_extended_two_switch_ports() -> None:
    p1, p2 = ibmad.parse_perfquery(read_real(PQ_SWITCH))
    assert (p1.kind, p1.lid, p1.port, p2.port) == ("Port extended counters", 1719, 1, 2)
    assert p1.counters["PortXmitWait"] == 22730501 and p2.counters["PortXmitWait"] == 36510964
    assert p1.counters["SymbolErrorCounter"] == 0 and p1.counters["ExcessiveBufferOverrunErrors"] == 0
    assert p1.counters["PortXmitData"] == 36298026860928 and "CounterSelect2" not in p1.counters


def test_perfquery_hca_and_rcv_error_details() -> None:
    (hca,) = ibmad.parse_perfquery(read_real(PQ_HCA))
    assert (hca.lid, hca.port, hca.counters["LinkDownedCounter"], hca.counters["PortXmitWait"]) == (
        134,
        1,
        0,
        0,
    )
    (det,) = ibmad.parse_perfquery(read_real(PQ_E))
    assert det.kind == "PortRcvErrorDetails counters" and (det.lid, det.port) == (2052, 1)
    assert det.counters == dict.fromkeys(
        ["PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
         "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors"], 0
    )  # fmt: skip


def test_perfquery_cut_value() -> None:
    text = read_real(PQ_HCA).rstrip("\n") + "\nQP1Drop"
    with pytest.raises(ParseError):
        ibmad.parse_perfquery(text)
    assert ibmad.parse_perfquery(text, partial=True)[0].counters["PortXmitWait"] == 0


def test_ibqueryerrors_human_suffix_values() -> None:
    (pe,) = ibqueryerrors.parse(read_real(IBQE))
    assert pe.guid == "0x1070fd0300370ea2" and pe.port is None
    assert pe.counters == {
        "LinkDownedCounter": 25, "PortRcvErrors": 26, "PortXmitDiscards": 2846, "PortXmitWait": 14681376621,
    }  # fmt: skip
    with pytest.raises(ParseError):
        ibqueryerrors.parse(read_real(IBQE) + "garbage here\n")


def test_ethtool_per_priority_discards_and_global_pause() -> None:
    d = nic_counters.parse_ethtool_stats(read_real(ETH_DISC))
    assert d.counters["rx_discards_phy"] == 0 and d.counters["rx_steer_missed_packets"] == 24627
    assert [d.prio("rx_prio{prio}_discards", p) for p in range(8)] == [0] * 8
    assert d.prio("rx_prio{prio}_pause", 3) is None  # this grep kept no pause counters
    p = nic_counters.parse_ethtool_stats(read_real(ETH_PAUSE))
    assert p.counters["tx_global_pause"] == 1266552 and p.counters["tx_pause_ctrl_phy"] == 1266552
    assert p.counters["tx_pci_signal_integrity"] == 3 and p.counters["tx_pause_storm_error_events"] == 0
    with pytest.raises(ParseError):
        nic_counters.parse_ethtool_stats(read_real(ETH_PAUSE) + "     tx_global_pau")
    cut = nic_counters.parse_ethtool_stats(read_real(ETH_PAUSE) + "     tx_global_pau", partial=True)
    assert cut.counters == p.counters


def test_rdma_statistic_four_ports_and_lag() -> None:
    ports = nic_counters.parse_rdma_statistic(read_real(RDMA_4))
    assert [(s.device, s.port) for s in ports] == [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_2", 1), ("mlx5_3", 1)]
    m0 = ports[0].counters
    assert (m0["out_of_buffer"], m0["resp_cqe_error"], m0["req_cqe_error"]) == (135, 1009, 22)
    assert m0["out_of_sequence"] == 0 and m0["packet_seq_err"] == 0 and len(m0) == 29
    (bond,) = nic_counters.parse_rdma_statistic(read_real(RDMA_BOND))
    assert bond.device == "mlx5_bond_0" and bond.counters["resp_cqe_error"] == 3297
    assert bond.counters["resp_cqe_flush_error"] == 2792
    cut = read_real(RDMA_4).rstrip("\n").rsplit(" ", 1)[0]  # last value gone: odd token count
    with pytest.raises(ParseError):
        nic_counters.parse_rdma_statistic(cut)
    assert len(nic_counters.parse_rdma_statistic(cut, partial=True)) == 3


def test_hw_counters_listing() -> None:
    files = nic_counters.parse_hw_counters_listing(read_real(HW_LS))
    assert len(files.names) == 30 and files.writable == ("lifespan",)
    for name in ("out_of_sequence", "packet_seq_err", "out_of_buffer", "np_cnp_sent", "rp_cnp_handled"):
        assert name in files.names
