"""``ethtool -S <netdev>`` of the simulated ConnectX RoCE rails, as the mlx5 driver shows it; every other
invocation is the real ethtool's.

Layout as ethtool prints driver statistics (a ``NIC statistics:`` line, then ``     <name>: <value>``, five
spaces, as in the real captures tests/fixtures/real/ethtool-S__*), names and group order as the mlx5
driver fills them (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c; meanings in the kernel's
Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst): a subset of the software
counters, the queue counters, the physical port's IEEE 802.3 / RFC 2863 / RFC 2819 groups, the PCIe
counters, per priority the traffic counters (``rx_prioN_bytes/packets/discards``, ``tx_prioN_bytes/packets``)
for N = 0..7, then the PFC counters (``rx_prioN_pause``, ``_pause_duration``, ``tx_prioN_pause``, ...) for
the priorities with PFC enabled only (mlx5e_query_pfc_combined) or the ``global`` ones when none is, and
the pause-storm watchdog counters. Per-channel counters (ch0_*, rx0_*, tx0_*) are left out.

Values are the port's quiet state: zero, except the counters a fault moves (:mod:`pausestorm`) and any
kept in the NIC's state. A netdev that is not a simulated RoCE rail, or any other ethtool command line,
goes to the real ethtool (diverted to ``<path>.distrib``; the lab's veths answer for themselves); without
it (a test root) a netdev the node does not have gets the real tool's answer to ``-S`` of a missing
device (ethtool 6.1, Debian 12: exit 96).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from . import paths, pausestorm
from . import state as S
from .mlnx import qos_view
from .pkghook import DIVERTED

REAL = (DIVERTED["ethtool"][0] + ".distrib", "/usr/sbin/ethtool.distrib")
#: `ethtool -S nosuchdev` (ethtool 6.1 ioctl path: get_stringset fails, perror) and its exit code
NO_DEVICE = "Cannot get stats strings information: No such device\n"
RC_NO_DEVICE = 96


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_SW = _names(
    "rx_packets rx_bytes tx_packets tx_bytes tx_tso_packets tx_tso_bytes rx_csum_unnecessary rx_csum_none "
    "rx_csum_complete tx_csum_partial tx_queue_stopped tx_queue_dropped tx_xmit_more tx_queue_wake "
    "tx_cqe_err rx_wqe_err rx_buff_alloc_err"
)
_QCNT = _names("rx_out_of_buffer rx_if_down_packets")
_VPORT = tuple(
    f"{d}_vport_{kind}_{unit}"
    for kind in ("unicast", "multicast", "broadcast", "rdma_unicast", "rdma_multicast")
    for d in ("rx", "tx")
    for unit in ("packets", "bytes")
)
_IEEE_802_3 = _names(
    "tx_packets_phy rx_packets_phy rx_crc_errors_phy tx_bytes_phy rx_bytes_phy tx_multicast_phy "
    "tx_broadcast_phy rx_multicast_phy rx_broadcast_phy rx_in_range_len_errors_phy rx_out_of_range_len_phy "
    "rx_oversize_pkts_phy rx_symbol_err_phy tx_mac_control_phy rx_mac_control_phy rx_unsupported_op_phy "
    "rx_pause_ctrl_phy tx_pause_ctrl_phy"
)
_RFC_2863 = _names("rx_discards_phy tx_discards_phy tx_errors_phy")
_RFC_2819 = _names(
    "rx_undersize_pkts_phy rx_fragments_phy rx_jabbers_phy rx_64_bytes_phy rx_65_to_127_bytes_phy "
    "rx_128_to_255_bytes_phy rx_256_to_511_bytes_phy rx_512_to_1023_bytes_phy rx_1024_to_1518_bytes_phy "
    "rx_1519_to_2047_bytes_phy rx_2048_to_4095_bytes_phy rx_4096_to_8191_bytes_phy rx_8192_to_10239_bytes_phy"
)
_PHY = _names("link_down_events_phy rx_buffer_passed_thres_phy")
_PCIE = _names(
    "rx_pci_signal_integrity tx_pci_signal_integrity outbound_pci_buffer_overflow outbound_pci_stalled_rd "
    "outbound_pci_stalled_wr outbound_pci_stalled_rd_events outbound_pci_stalled_wr_events"
)
_PRIO_TRAFFIC = _names("rx_{p}_bytes rx_{p}_packets rx_{p}_discards tx_{p}_bytes tx_{p}_packets")
_PRIO_PFC = _names(
    "rx_{p}_pause rx_{p}_pause_duration tx_{p}_pause tx_{p}_pause_duration rx_{p}_pause_transition"
)
_STALL = _names("tx_pause_storm_warning_events tx_pause_storm_error_events")


def names(pfc: list[int]) -> list[str]:
    """The counter names in the driver's order, for a port with PFC enabled on the priorities ``pfc``."""
    out = [*_SW, *_QCNT, *_VPORT, *_IEEE_802_3, *_RFC_2863, *_RFC_2819, *_PHY, *_PCIE]
    out += [f.format(p=f"prio{p}") for p in range(8) for f in _PRIO_TRAFFIC]
    on = [p for p in range(8) if p < len(pfc) and pfc[p]]
    out += [f.format(p=f"prio{p}") for p in on for f in _PRIO_PFC]
    if not on:  # global (802.3x) pause, mlx5's default when no priority has PFC
        out += [f.format(p="global") for f in _PRIO_PFC]
    return out + list(_STALL)


def stats(st: dict[str, Any], nic: dict[str, Any], now: float) -> dict[str, int]:
    """The rail's counters at ``now``: kept values plus what an active fault adds."""
    kept = nic.get(pausestorm.KEPT) or {}
    grown = pausestorm.rising(st, nic, now)
    return {n: int(kept.get(n, 0)) + grown.get(n, 0) for n in names(qos_view(st, nic)["pfc"])}


def render(values: dict[str, int]) -> str:
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in values.items())


def _stats_netdev(argv: list[str]) -> str | None:
    """The netdev of a plain ``-S DEV`` / ``--statistics DEV``, else None."""
    if len(argv) == 2 and argv[0] in ("-S", "--statistics"):
        return argv[1]
    return None


def _real(argv: list[str]) -> None:
    """Hand the command line to the real ethtool (inside a node, when its package put it there)."""
    if paths.in_node():
        for real in REAL:
            if os.path.exists(real):
                os.execv(real, ["ethtool", *argv])


def main(argv: list[str]) -> int:
    netdev = _stats_netdev(argv)
    try:
        st: dict[str, Any] | None = S.load()
    except (OSError, ValueError):
        st = None  # no simulated hardware here: everything is the real tool's
    nics = (st or {}).get("nics", [])
    nic = next((n for n in nics if netdev is not None and n["netdev"] == netdev), None)
    if st is not None and nic is not None and S.link_layer(nic) == "Ethernet":
        sys.stdout.write(render(stats(st, nic, pausestorm._now())))
        return 0
    _real(argv)
    if netdev is not None and nic is None:
        sys.stderr.write(NO_DEVICE)
        return RC_NO_DEVICE
    sys.stderr.write("clusterforge-sim: only 'ethtool -S <RoCE rail netdev>' is simulated\n")
    return 1
