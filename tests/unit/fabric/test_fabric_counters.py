"""Counters as rates over a window, judged against the policy (defaults, lossless priority, overrides)."""

from __future__ import annotations

import pytest

from clusterforge.fabric.counters import default_policy, from_perfquery, judge, limits, window_s
from clusterforge.hw import ibmad, nic_counters
from tests.conftest import REAL


def test_policy_has_every_counter_the_issue_names() -> None:
    ib = limits("infiniband")
    assert set(ib) == {
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "port_xmit_discards",
        "excessive_buffer_overrun_errors",
    }
    roce = limits("roce", lossless_prio=3)
    for name in ("out_of_sequence", "packet_seq_err", "out_of_buffer", "np_cnp_sent", "rp_cnp_handled"):
        assert name in roce
    assert {"rx_prio3_pause", "tx_prio3_pause", "rx_discards_phy", "rx_prio3_discards"} <= set(roce)
    assert all(v.source for v in roce.values())
    assert "rx_prio5_pause" in limits("roce", lossless_prio=5)
    assert set(default_policy()) == {"window_s", "infiniband", "roce", "skus"}
    # where a node shows each counter: the port's sysfs dirs, or ethtool -S
    assert {v.read for v in ib.values()} == {"counters"}
    assert {k for k, v in roce.items() if v.read == "hw_counters"} == {
        "out_of_sequence",
        "packet_seq_err",
        "out_of_buffer",
        "np_cnp_sent",
        "rp_cnp_handled",
    }
    assert {v.read for v in roce.values()} == {"hw_counters", "ethtool"}


def test_window_default_per_sku_and_positive() -> None:
    assert window_s() == 5.0
    policy = {"window_s": 3, "skus": {"big": {"window_s": 10}}}
    assert (window_s("big", policy), window_s("other", policy), window_s(policy={})) == (10.0, 3.0, 5.0)
    with pytest.raises(ValueError, match="window_s must be positive"):
        window_s(policy={"window_s": 0})
    over = limits("roce", overrides={"out_of_sequence": 2, "new_counter": 1})
    assert over["out_of_sequence"].read == "hw_counters" and over["out_of_sequence"].source == "override"
    assert over["new_counter"].read == ""


def test_ib_counter_rising_on_a_rail_fails() -> None:
    first = {
        f"lid{b.lid}/{b.port}": from_perfquery(b.counters)
        for b in ibmad.parse_perfquery(
            (REAL / "perfquery-x__edr-switch-lid1719-2ports-xmitwait-osc-exporter__1.txt").read_text()
        )
    }
    second = {k: dict(v) for k, v in first.items()}
    second["lid1719/2"]["symbol_error"] += 12
    out = judge(first, second, 10.0, limits("infiniband"))
    fails = [(v.port, v.counter, v.delta, v.per_s) for v in out if v.verdict == "fail"]
    assert fails == [("lid1719/2", "symbol_error", 12, 1.2)]
    assert sum(1 for v in out if v.verdict == "pass") == 2 * 6 - 1


def test_pfc_storm_and_loss_on_the_lossless_priority_fail() -> None:
    base = nic_counters.parse_ethtool_stats(
        (REAL / "ethtool-S__cx4-lx-25g-mlx5-discards-grep-prio-discards-cnnote__excerpt2.txt").read_text()
    ).counters
    first = {"eth0": dict(base, rx_prio3_pause=0, tx_prio3_pause=0)}
    calm = {"eth0": dict(base, rx_prio3_pause=50, tx_prio3_pause=0)}
    lim = limits("roce")
    assert all(v.verdict == "pass" for v in judge(first, calm, 5, lim))
    storm = {"eth0": dict(base, rx_prio3_pause=5_000_000, tx_prio3_pause=0)}
    assert [v.counter for v in judge(first, storm, 5, lim) if v.verdict == "fail"] == ["rx_prio3_pause"]
    loss = {"eth0": dict(base, rx_prio3_pause=0, tx_prio3_pause=0, rx_prio3_discards=1)}
    assert [v.counter for v in judge(first, loss, 5, lim) if v.verdict == "fail"] == ["rx_prio3_discards"]
    other = {"eth0": dict(base, rx_prio3_pause=0, tx_prio3_pause=0, rx_prio1_discards=9)}
    assert all(v.verdict == "pass" for v in judge(first, other, 5, lim))  # not the lossless priority


def test_roce_hw_counters_cnp_reported_loss_judged_and_overrides() -> None:
    (p,) = [s for s in nic_counters.parse_rdma_statistic(
        (REAL / "rdma-statistic__mlx5-bond0-roce-lag-resp-cqe-errors-cnnote__2.txt").read_text()
    )]  # fmt: skip
    first = {"mlx5_bond_0/1": dict(p.counters, np_cnp_sent=0, rp_cnp_handled=0)}
    second = {"mlx5_bond_0/1": dict(first["mlx5_bond_0/1"], np_cnp_sent=900, out_of_sequence=3)}
    out = {v.counter: v for v in judge(first, second, 3, limits("roce"))}
    assert out["np_cnp_sent"].verdict == "info" and out["np_cnp_sent"].per_s == 300
    assert out["out_of_sequence"].verdict == "fail"
    tuned = {v.counter: v for v in judge(first, second, 3, limits("roce", overrides={"np_cnp_sent": 100}))}
    assert tuned["np_cnp_sent"].verdict == "fail" and tuned["np_cnp_sent"].limit == 100


def test_reset_or_missing_counter_is_an_error_not_a_pass() -> None:
    lim = limits("infiniband")
    out = judge({"p": {"symbol_error": 10, "link_downed": 1}}, {"p": {"symbol_error": 2}}, 1, lim)
    assert {(v.counter, v.verdict) for v in out} == {("symbol_error", "error"), ("link_downed", "error")}
    gone = judge({"p": {"symbol_error": 1}}, {}, 1, lim)
    assert [v.verdict for v in gone] == ["error"]
    with pytest.raises(ValueError):
        judge({}, {}, 0, lim)
