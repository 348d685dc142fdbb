"""Pure topology engine for rail-optimized fat-tree compute fabrics (InfiniBand or RoCE).

``plan_fabric(FabricInput) -> Fabric`` derives the switch counts, the pod/core-group structure and
every cable of a rail-optimized leaf/spine(/core) fabric from first principles: radix, scalable-unit
size, rails and the requested oversubscription. No tables are looked up; docs/fabric.md gives the
formulas and checks them against the published NVIDIA DGX SuperPOD H100 and B200 figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from clusterforge.plan.fabric_cabling import (
    FailureDomains,
    Link,
    LinkKind,
    NodePorts,
    Switch,
    SwitchRole,
    cable,
)
from clusterforge.plan.fabric_layout import (
    FabricLayout,
    bisection_links,
    ceil_div,
    max_switch_hops,
    one_tier,
    reduce_ratio,
    spine_down_capacity,
    three_tier,
    tier_limits,
    two_tier,
)

__all__ = [
    "Fabric",
    "FabricInput",
    "FabricLayout",
    "FailureDomains",
    "Link",
    "LinkKind",
    "NodePorts",
    "Switch",
    "SwitchRole",
    "plan_fabric",
    "tier_limits",
]


@dataclass(frozen=True)
class FabricInput:
    name: str  # e.g. "ib0"
    kind: Literal["infiniband", "roce"]
    nodes: tuple[str, ...]  # node names in placement order; node i belongs to SU i // su_size
    rails: int  # compute NICs per node (8 for HGX); one leaf per rail per SU
    su_size: int = 32  # nodes per scalable unit
    radix: int = 64  # switch ports at port_speed_gbps
    port_speed_gbps: int = 400
    oversubscription: tuple[int, int] = (1, 1)  # downlink:uplink bandwidth at the leaf (and spine)
    switch_model: str = "QM9700"


@dataclass(frozen=True)
class Fabric:
    """A planned fabric. Counts are of provisioned switches (a partial last SU is provisioned as a
    full SU); cables and ``node_ports`` cover the nodes that exist."""

    name: str
    kind: Literal["infiniband", "roce"]
    switch_model: str
    radix: int
    port_speed_gbps: int
    tiers: int  # 1 (a single leaf), 2 (leaf/spine) or 3 (leaf/spine/core)
    scalable_units: int
    su_size: int
    rails: int
    nodes: int  # nodes present
    endpoints: int  # provisioned GPU endpoints N = scalable_units * su_size * rails
    connected_endpoints: int  # nodes * rails
    leaves: int
    spines: int
    cores: int
    layout: FabricLayout  # pods, uplinks, links per pair... (see fabric_layout.FabricLayout)
    requested_oversubscription: tuple[int, int]
    oversubscription: tuple[int, int]  # achieved, worst stage (leaf or spine), reduced
    leaf_oversubscription: tuple[int, int]  # su_size : uplinks_per_leaf, reduced
    spine_oversubscription: tuple[int, int] | None  # three tiers only
    bisection_gbps: int  # per direction, first half of the nodes vs the second half, all rails
    max_switch_hops: int  # worst case between two GPUs on the same rail (no NVLink/PXN)
    max_switch_hops_any_rail: int  # worst case between any two GPUs, cross-rail via the fabric
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    node_ports: Mapping[tuple[str, int], tuple[str, int]]  # (node, rail) -> (leaf, leaf port)
    failure_domains: FailureDomains

    @property
    def cable_counts(self) -> dict[LinkKind, int]:
        lay = self.layout
        return {
            "node-leaf": self.connected_endpoints,
            "leaf-spine": lay.leaves * lay.uplinks_per_leaf,
            "spine-core": lay.spines * lay.spine_uplinks,
        }


def _validate(inp: FabricInput) -> tuple[int, int]:
    if not inp.name:
        raise ValueError("fabric name must not be empty")
    if inp.kind not in ("infiniband", "roce"):
        raise ValueError(f"fabric {inp.name}: kind must be 'infiniband' or 'roce', got {inp.kind!r}")
    if not inp.nodes:
        raise ValueError(f"fabric {inp.name}: no nodes to connect")
    if len(set(inp.nodes)) != len(inp.nodes):
        dup = sorted(n for n, c in Counter(inp.nodes).items() if c > 1)[:5]
        raise ValueError(f"fabric {inp.name}: duplicate node names {dup}")
    for field, value, low in (
        ("rails", inp.rails, 1),
        ("su_size", inp.su_size, 1),
        ("radix", inp.radix, 2),
        ("port_speed_gbps", inp.port_speed_gbps, 1),
    ):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"fabric {inp.name}: {field} must be an integer >= {low}, got {value!r}")
    down, up = inp.oversubscription
    if not (isinstance(down, int) and isinstance(up, int) and up >= 1 and down >= up):
        raise ValueError(
            f"fabric {inp.name}: oversubscription must be downlink:uplink with down >= up >= 1 "
            f"(e.g. (1, 1), (2, 1), (3, 2)), got {inp.oversubscription!r}"
        )
    return reduce_ratio(down, up)


def _min_radix_for(endpoints: int) -> int:
    r = 2
    while r**3 // 4 < endpoints:
        r += 2
    return r


def _layout(inp: FabricInput, ratio: tuple[int, int]) -> FabricLayout:
    radix, su, rails = inp.radix, inp.su_size, inp.rails
    n_su = ceil_div(len(inp.nodes), su)
    n_end = n_su * su * rails
    if n_su == 1 and rails == 1:
        if su > radix:
            raise ValueError(f"fabric {inp.name}: su_size {su} exceeds the switch radix {radix}")
        return one_tier(su)
    uplinks = ceil_div(su * ratio[1], ratio[0])
    if su + uplinks > radix:
        raise ValueError(
            f"fabric {inp.name}: a leaf needs {su} downlinks (su_size) + {uplinks} uplinks "
            f"(ceil({su} x {ratio[1]}/{ratio[0]}) for {ratio[0]}:{ratio[1]}) = {su + uplinks} ports, "
            f"more than the radix {radix}; use a smaller su_size, more oversubscription or a "
            f"higher-radix switch"
        )
    two_max, three_max = tier_limits(radix)
    if n_end > three_max:
        raise ValueError(
            f"fabric {inp.name}: {n_end} endpoints ({n_su} SUs x {su} nodes x {rails} rails) exceed the "
            f"three-tier fat-tree limit radix^3/4 = {three_max} for radix {radix}; use switches of radix "
            f">= {_min_radix_for(n_end)} (or split the cluster into several fabrics/planes)"
        )
    if n_end <= two_max:
        lay = two_tier(radix, su, uplinks, n_su, rails)
        if lay is not None:
            return lay
    lay = three_tier(radix, su, uplinks, n_su, rails, ratio)
    if lay is None:
        cap = spine_down_capacity(radix, *ratio)
        raise ValueError(
            f"fabric {inp.name}: {n_su} SUs x {rails} rails ({n_end} endpoints) cannot be wired as a "
            f"three-tier fat tree of radix {radix}: at most {radix} pods can meet a core group, and a pod "
            f"holds at most {cap} leaves of one rail (a spine's downlinks at {ratio[0]}:{ratio[1]}); use a "
            f"larger su_size (fuller leaves), fewer rails per fabric or a higher-radix switch"
        )
    return lay


def plan_fabric(inp: FabricInput) -> Fabric:
    """Plan the leaf/spine(/core) fabric for ``inp``. Raises ValueError on impossible inputs."""
    ratio = _validate(inp)
    lay = _layout(inp, ratio)
    cab = cable(inp.name, inp.nodes, lay, inp.radix, inp.port_speed_gbps)
    same_rail, any_rail = max_switch_hops(lay)
    leaf_ratio = reduce_ratio(lay.su_size, lay.uplinks_per_leaf) if lay.tiers > 1 else (1, 1)
    spine_ratio = reduce_ratio(lay.spine_downlinks, lay.spine_uplinks) if lay.tiers == 3 else None
    worst = leaf_ratio
    if spine_ratio is not None and spine_ratio[0] * worst[1] > worst[0] * spine_ratio[1]:
        worst = spine_ratio
    n = len(inp.nodes)
    return Fabric(
        name=inp.name,
        kind=inp.kind,
        switch_model=inp.switch_model,
        radix=inp.radix,
        port_speed_gbps=inp.port_speed_gbps,
        tiers=lay.tiers,
        scalable_units=lay.scalable_units,
        su_size=lay.su_size,
        rails=lay.rails,
        nodes=n,
        endpoints=lay.endpoints,
        connected_endpoints=n * lay.rails,
        leaves=lay.leaves,
        spines=lay.spines,
        cores=lay.cores,
        layout=lay,
        requested_oversubscription=ratio,
        oversubscription=worst,
        leaf_oversubscription=leaf_ratio,
        spine_oversubscription=spine_ratio,
        bisection_gbps=bisection_links(lay, n) * inp.port_speed_gbps,
        max_switch_hops=same_rail,
        max_switch_hops_any_rail=any_rail,
        switches=cab.switches,
        links=cab.links,
        node_ports=cab.node_ports,
        failure_domains=cab.failure_domains,
    )
