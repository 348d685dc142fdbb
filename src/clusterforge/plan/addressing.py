"""IP and MAC plans: management, storage and one subnet per rail per compute fabric.

Addresses are handed out as strings straight from integers: a 12,500-node cluster takes 125,000 of them,
and `ipaddress` objects would cost more than the rest of the plan.
"""

from __future__ import annotations

import ipaddress

from clusterforge.spec.model import Cluster


def ip_str(value: int) -> str:
    """Dotted quad of an IPv4 address given as an integer."""
    return f"{value >> 24}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


class Allocator:
    """Hands out host addresses of one subnet in order, after the reserved ones, skipping taken ones."""

    def __init__(
        self, net: ipaddress.IPv4Network, reserved: int, taken: set[ipaddress.IPv4Address] | None = None
    ) -> None:
        self.net = net
        self._next = int(net.network_address) + 1 + reserved
        self._last = int(net.broadcast_address) - 1
        self._taken = {int(a) for a in taken or ()}

    def take_str(self) -> str:
        """The next free address as a string."""
        while self._next <= self._last:
            ip = self._next
            self._next += 1
            if ip not in self._taken:
                return ip_str(ip)
        raise ValueError(f"subnet {self.net} is exhausted")  # the spec checks make this unreachable

    def take(self) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(self.take_str())


MAX_MAC_ORDINAL = 1 << 24


def mac(kind: int, ordinal: int) -> str:
    """Locally administered MAC 02:cf:<ordinal bits 16-23>:<kind>:<ordinal bits 8-15>:<ordinal bits 0-7>
    (kind 0 = management, 1+r = rail r); below 65,536 nodes the third byte is 00."""
    if not 0 <= ordinal < MAX_MAC_ORDINAL or not 0 <= kind < 256:
        raise ValueError("ordinal or kind out of range for a generated MAC")
    return f"02:cf:{ordinal >> 16:02x}:{kind:02x}:{(ordinal >> 8) & 255:02x}:{ordinal & 255:02x}"


def mac_parts(ordinal: int) -> tuple[str, str]:
    """`mac(kind, ordinal) == f"{hi}{kind:02x}{lo}"`: the per-node parts, computed once per node."""
    if not 0 <= ordinal < MAX_MAC_ORDINAL:
        raise ValueError("ordinal out of range for a generated MAC")
    return f"02:cf:{ordinal >> 16:02x}:", f":{(ordinal >> 8) & 255:02x}:{ordinal & 255:02x}"


def management_ips(c: Cluster, names: list[str]) -> list[str]:
    """Management address per node, `names` in cluster order: an explicit per-node `management_ip` wins;
    otherwise node number `ordinal` gets host `reserved + 1 + ordinal` of the subnet. Addresses therefore do
    not
    move when another node is given an explicit one (the spec checks reject an explicit address that is the
    automatic address of another node)."""
    explicit = {n.name: str(n.management_ip) for p in c.pools for n in p.nodes if n.management_ip is not None}
    first = auto_management_base(c)
    return [explicit.get(name) or ip_str(first + i) for i, name in enumerate(names)]


def auto_management_base(c: Cluster) -> int:
    """Integer address of the automatic management address of node ordinal 0."""
    return int(c.addressing.management.network_address) + 1 + c.addressing.reserved
