"""The simulator's ``ethtool -S`` of the RoCE rails (mlx5 names and layout, read by the product's parser) and
the ``pause-storm`` fault that makes the lossless priority's pause counter rise."""

from __future__ import annotations

import re

import pytest

from clusterforge.hw import nic_counters
from clusterforge.lab.sim import ethtool, pausestorm, pkghook
from clusterforge.lab.sim import state as S
from tests.unit.hw.conftest import read_real

from .conftest import SimNode

RAIL1 = "enp64s0np0"  # h100-sxm-8x400g-roce rail 1
PFC3 = "0,0,0,1,0,0,0,0"
PAUSE_CAPTURE = "ethtool-S__cx4-lx-25g-mlx5-pause-pci-grep-tx-global-pause-cnnote__excerpt1.txt"


def stats(node: SimNode, netdev: str = RAIL1) -> dict[str, int]:
    return nic_counters.parse_ethtool_stats(node.ok("ethtool", "-S", netdev)).counters


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(pausestorm, "_now", lambda: now[0])
    return now


def test_layout_and_names_as_mlx5_shows_them(node: SimNode) -> None:
    out = node.ok("ethtool", "-S", RAIL1)
    lines = out.splitlines()
    assert lines[0] == "NIC statistics:"
    # the real captures' line form: five spaces, name, colon, one space, the value
    real = read_real("ethtool-S__cx4-lx-25g-mlx5-discards-grep-prio-discards-cnnote__excerpt2.txt")
    form = re.compile(r"^ {5}[a-z0-9_]+: \d+$")
    assert all(form.match(ln) for ln in real.splitlines()) and all(form.match(ln) for ln in lines[1:])
    got = stats(node)
    for name in ("rx_packets_phy", "tx_packets_phy", "rx_discards_phy", "tx_pause_storm_error_events"):
        assert name in got
    assert "rx_pause_ctrl_phy" in got and "tx_pause_ctrl_phy" in got
    for p in range(8):
        assert f"rx_prio{p}_discards" in got and f"tx_prio{p}_packets" in got
    # the names the real captures show (grep-filtered mlx5 outputs), in the driver's order
    for capture, least in ((real, 9), (read_real(PAUSE_CAPTURE), 17)):
        real_names = list(nic_counters.parse_ethtool_stats(capture).counters)
        shown = [n for n in got if n in real_names]
        assert shown == [n for n in real_names if n in got] and len(shown) >= least
    # NIC defaults: no PFC, so the driver shows the global (802.3x) pause counters, no per-priority ones
    assert "rx_global_pause" in got and not any(re.match(r"[rt]x_prio\d_pause", n) for n in got)


def test_pfc_counters_follow_the_nic_qos(node: SimNode) -> None:
    node.ok("mlnx_qos", "-i", RAIL1, "--pfc", PFC3)
    got = stats(node)
    pfc = [n for n in got if "pause" in n and "prio" in n]
    assert pfc == [
        "rx_prio3_pause",
        "rx_prio3_pause_duration",
        "tx_prio3_pause",
        "tx_prio3_pause_duration",
        "rx_prio3_pause_transition",
    ]
    assert "rx_global_pause" not in got and list(got)[-2:] == list(ethtool._STALL)
    assert "rx_prio3_pause" not in stats(node, "enp24s0np0")  # rail 0: PFC still off
    node.fault("pfc-off", rail=1)  # PFC held off: the driver has no PFC priority to show
    assert "rx_prio3_pause" not in stats(node)


def test_pause_storm_refusals(node: SimNode, ibnode: SimNode, clock: list[float]) -> None:
    # make_plan's nodes carry no desired state: the priority must be given
    rc, _, err = node.run("fault", "set", "pause-storm", "rail=1")
    assert rc == 2 and "no lossless priority in the plan's desired state: give prio=P" in err
    assert node.run("fault", "set", "pause-storm", "rail=1", "prio=9")[0] == 2
    assert node.run("fault", "set", "pause-storm", "rail=1", "prio=3", "rate=0")[0] == 2
    assert node.run("fault", "set", "pause-storm", "rail=1", "prio=3", "rate=fast")[0] == 2
    rc, _, err = ibnode.run("fault", "set", "pause-storm", "rail=0", "prio=3")
    assert rc == 2 and "InfiniBand" in err
    node.fault("pause-storm", rail=1, prio=5, rate=100)
    node.ok("mlnx_qos", "-i", RAIL1, "--pfc", "0,0,0,0,0,1,0,0")
    clock[0] += 1
    assert stats(node)["rx_prio5_pause"] == 100


def test_not_a_rail_or_not_simulated(node: SimNode, ibnode: SimNode, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, err = node.run("ethtool", "-S", "nosuch0")
    assert (rc, out, err) == (96, "", "Cannot get stats strings information: No such device\n")
    rc, _, err = node.run("ethtool", RAIL1)  # link settings: the real tool's (the lab's veth), not here
    assert rc == 1 and "only 'ethtool -S <RoCE rail netdev>' is simulated" in err
    assert ibnode.run("ethtool", "-S", ibnode.state["nics"][0]["netdev"])[0] == 1  # IPoIB: not simulated
    # inside a node, whatever is not simulated goes to the diverted real ethtool
    ran: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(ethtool.paths, "in_node", lambda: True)
    monkeypatch.setattr(ethtool.os.path, "exists", lambda p: p == "/sbin/ethtool.distrib")
    monkeypatch.setattr(ethtool.os, "execv", lambda p, a: ran.append((p, a)))
    with node.env():
        ethtool.main(["-S", "mgmt0"])
        ethtool.main(["-i", RAIL1])
    assert ran == [
        ("/sbin/ethtool.distrib", ["ethtool", "-S", "mgmt0"]),
        ("/sbin/ethtool.distrib", ["ethtool", "-i", RAIL1]),
    ]


def test_ethtool_is_diverted_with_its_package() -> None:
    assert pkghook.DIVERTED["ethtool"] == ("/sbin/ethtool", "ethtool")
    assert pkghook.wanted({"ethtool"})["/sbin/ethtool"] and not pkghook.wanted(set())["/sbin/ethtool"]
    assert S.SCHEMA == 1  # lossless_priority is optional in state.json: older nodes need prio=P
