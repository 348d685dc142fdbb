"""Pure naming and addressing rules of the lab: netns, host-side links, bridges, MACs (unit-tested)."""

from __future__ import annotations

import hashlib
import re

from clusterforge.lab import config

IFNAMSIZ = 15  # usable characters of a Linux interface name
RAIL_BRIDGE_PREFIX = "cfbr-"


def _short(text: str, n: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def netns_name(cluster: str, node: str) -> str:
    return f"{config.NETNS_PREFIX}{cluster}-{node}"


def node_tag(cluster: str, node: str) -> str:
    """Six hex characters naming a node's host-side links (stable, unique in practice)."""
    return _short(f"{cluster}/{node}")


def host_link(cluster: str, node: str, rail: int | None) -> str:
    """Host end of a node's veth: cf<tag>m (management) or cf<tag>r<rail>."""
    suffix = "m" if rail is None else f"r{rail}"
    name = f"{config.LINK_PREFIX}{node_tag(cluster, node)}{suffix}"
    assert len(name) <= IFNAMSIZ
    return name


def rail_bridge(fabric: str, rail: int) -> str:
    """Bridge joining rail `rail` of every node on `fabric`: cfbr-<fabric>-<rail>, hashed when too long."""
    name = f"{RAIL_BRIDGE_PREFIX}{fabric}-{rail}"
    if len(name) > IFNAMSIZ or not re.fullmatch(r"[A-Za-z0-9_]+", fabric):
        name = f"{RAIL_BRIDGE_PREFIX}{_short(fabric)}-{rail}"
    return name


def lab_mac(kind: int, ordinal: int, host_side: bool = False) -> str:
    """Locally administered MAC, the plan's rule: 02:cf:<side>:<kind>:<ordinal hi>:<ordinal lo>.

    kind 0 = management, 1 + r = rail r; side 00 = node end (as in the plan), 01 = host end of the veth.
    """
    if not 0 <= ordinal < 65536 or not 0 <= kind < 256:
        raise ValueError(f"ordinal {ordinal} or kind {kind} out of range for a lab MAC")
    side = 1 if host_side else 0
    return f"02:cf:{side:02x}:{kind:02x}:{ordinal >> 8:02x}:{ordinal & 0xFF:02x}"


def machine_id(cluster: str, node: str) -> str:
    """Stable per-node /etc/machine-id (32 hex)."""
    return hashlib.sha256(f"clusterforge-lab/{cluster}/{node}".encode()).hexdigest()[:32]


def is_lab_link(name: str) -> bool:
    """A host-side veth end made by the lab."""
    return bool(re.fullmatch(rf"{config.LINK_PREFIX}[0-9a-f]{{6}}(m|r\d+)", name))


def is_lab_bridge(name: str) -> bool:
    return name == config.MGMT_BRIDGE or name.startswith(RAIL_BRIDGE_PREFIX)
