"""Multi-node NVLink domains (a SKU's `nvlink_domain`, e.g. GB200 NVL72: 18 nodes, one rack): a pool of such a
SKU fills whole domains, each domain stands in one rack as the site layout places nodes, and a Slurm cluster
is all domain SKUs or none (one topology.conf is either topology/block or topology/tree, docs/fabric.md)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterforge.spec.checks_net import Bad
from clusterforge.spec.layout import NodeSlot, rack_name
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku


def nvlink_checks(c: Cluster, skus: dict[str, Sku], slots: Sequence[NodeSlot], bad: Bad) -> None:
    by_pool: dict[str, list[NodeSlot]] = {}
    for s in slots:
        by_pool.setdefault(s.pool, []).append(s)
    per_rack = c.site.racks.nodes_per_rack
    with_domain: list[int] = []
    without: list[int] = []
    for i, p in enumerate(c.pools):
        sku = skus.get(p.sku)
        if sku is None:
            continue
        dom = sku.nvlink_domain
        if dom is None:
            without.append(i)
            continue
        with_domain.append(i)
        n = dom.nodes
        if p.count % n:
            bad(
                ("pools", i, "count"),
                f"whole NVLink domains of SKU {sku.name}: a multiple of {n} nodes "
                f"({dom.gpus} GPUs per domain)",
                str(p.count),
                f"set count to {max(p.count // n, 1) * n} or {(p.count // n + 1) * n}",
            )
            continue
        members = sorted(by_pool.get(p.name, []), key=lambda s: s.index)
        for k in range(0, len(members), n):
            racks = {s.rack for s in members[k : k + n]}
            if len(racks) > 1:
                first, last = members[k], members[k + n - 1]
                bad(
                    ("site", "racks", "nodes_per_rack"),
                    f"every NVLink domain of pool '{p.name}' ({n} nodes of {sku.name}) in one rack",
                    f"domain {first.name}..{last.name} split across racks "
                    f"{', '.join(rack_name(c, r) for r in sorted(racks))} at {per_rack} nodes per rack",
                    f"set nodes_per_rack to a multiple of {n} ({n} for one domain per rack) and give the "
                    "pools before this one whole racks",
                )
                break
    if c.pool_manager == "slurm" and with_domain and without:
        i = without[0]
        bad(
            ("pools", i, "sku"),
            "one Slurm topology for the whole cluster: every pool's SKU with an NVLink domain "
            f"(topology/block) or none (topology/tree); pool '{c.pools[with_domain[0]].name}' has SKU "
            f"{c.pools[with_domain[0]].sku} with one",
            f"pool '{c.pools[i].name}' with SKU {c.pools[i].sku}, which has none",
            "run the two kinds of nodes as two Slurm clusters (two specs), or use one kind of SKU; "
            "clusterforge does not render Slurm's topology.yaml",
        )
