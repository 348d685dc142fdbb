"""Deterministic node naming and rack placement, shared by the checks and the planner."""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.spec.model import Cluster


@dataclass(frozen=True, slots=True)
class NodeSlot:
    name: str
    pool: str
    index: int  # 1-based within the pool
    ordinal: int  # 0-based across the cluster, in spec order
    rack: int  # 0-based rack index


def node_slots(cluster: Cluster) -> list[NodeSlot]:
    """Nodes in spec order (pool by pool), placed rack by rack, `nodes_per_rack` per rack."""
    out: list[NodeSlot] = []
    per_rack = cluster.site.racks.nodes_per_rack
    for pool in cluster.pools:
        for i in range(1, pool.count + 1):
            ordinal = len(out)
            out.append(NodeSlot(pool.naming.format(index=i), pool.name, i, ordinal, ordinal // per_rack))
    return out


def rack_name(cluster: Cluster, rack: int) -> str:
    return cluster.site.racks.naming.format(index=rack + 1)
