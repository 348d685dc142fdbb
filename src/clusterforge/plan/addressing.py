"""IP and MAC plans: management, storage and one subnet per rail per compute fabric."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from clusterforge.spec.model import Cluster


class Allocator:
    """Hands out host addresses of one subnet in order, after the reserved ones, skipping taken ones."""

    def __init__(self, net: ipaddress.IPv4Network, reserved: int, taken: set[ipaddress.IPv4Address] | None = None):
        self.net = net
        self._next = int(net.network_address) + 1 + reserved
        self._last = int(net.broadcast_address) - 1
        self._taken = taken or set()

    def take(self) -> ipaddress.IPv4Address:
        while self._next <= self._last:
            ip = ipaddress.IPv4Address(self._next)
            self._next += 1
            if ip not in self._taken:
                return ip
        raise ValueError(f"subnet {self.net} is exhausted")  # the spec checks make this unreachable


def mac(kind: int, ordinal: int) -> str:
    """Locally administered MAC: 02:cf:00:<kind>:<ordinal hi>:<ordinal lo> (kind 0 = management, 1+r = rail r)."""
    if not 0 <= ordinal < 65536 or not 0 <= kind < 256:
        raise ValueError("ordinal or kind out of range for a lab MAC")
    return f"02:cf:00:{kind:02x}:{ordinal >> 8:02x}:{ordinal & 0xFF:02x}"


def management_ips(c: Cluster, names: list[str]) -> Iterator[ipaddress.IPv4Address]:
    """Management address per node (in `names` order): explicit per-node entries win."""
    explicit = {n.name: n.management_ip for p in c.pools for n in p.nodes if n.management_ip is not None}
    alloc = Allocator(c.addressing.management, c.addressing.reserved, set(explicit.values()))  # type: ignore[arg-type]
    for name in names:
        ip = explicit.get(name)
        yield ip if ip is not None else alloc.take()
