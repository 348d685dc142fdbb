"""The management network part of a node's desired state (desired ``management``): the netdev the node is
reached on, the link speed it must negotiate, its MTU and the default gateway the node routes through.

A function of the node's SKU (its management NIC), the spec's ``fabrics.management`` (the switch side) and
``addressing.gateway``; validators/test_network.py certifies it and derives none of it again. The site's OS
installer configures this network (clusterforge connects over it and never rewrites it), so nothing here
is applied by a role: it is what the installer's configuration and the cabling must give.

A link negotiates the fastest speed both ends support: the lower of the NIC's and the switch port's
(spec/checks_mgmt.py warns when the spec's switch ports are faster than the SKU's NIC). Pure and
deterministic, plain JSON types only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MBPS_PER_GBPS = 1000  # /sys/class/net/<netdev>/speed is in Mb/s (10 Gb/s shows as 10000)


def management_input(network: Mapping[str, Any], gateway: str | None) -> dict[str, Any]:
    """What node_desired needs from the cluster for the management network: the spec's
    ``fabrics.management`` (as plain data: speed_gbps, mtu) and ``addressing.gateway`` (None: no default
    route is declared, so none is certified)."""
    return {
        "speed_gbps": int(network["speed_gbps"]),
        "mtu": int(network["mtu"]),
        "gateway": str(gateway) if gateway is not None else None,
    }


def link_speed_mbps(nic_gbps: int, switch_gbps: int) -> int:
    """The speed a link between a NIC of ``nic_gbps`` and a switch port of ``switch_gbps`` negotiates."""
    return min(int(nic_gbps), int(switch_gbps)) * MBPS_PER_GBPS


def management_desired(sku: Mapping[str, Any], inp: Mapping[str, Any]) -> dict[str, Any]:
    """The management network state of a node of ``sku`` (the plan's SKU entry); ``inp``:
    `management_input`."""
    nic = sku["management_nic"]
    return {
        "netdev": str(nic["netdev"]),
        "speed_mbps": link_speed_mbps(int(nic["speed_gbps"]), int(inp["speed_gbps"])),
        "mtu": int(inp["mtu"]),
        "gateway": inp.get("gateway"),
    }
