"""Names, switches, cables and port maps of a planned fabric, generated from a FabricLayout.

Everything here is compact on purpose: a 12,500-node x 8-rail fabric has ~300k cables, so cables
are NamedTuples sharing their (interned) device-name strings, and the (node, rail) -> leaf port map
is computed arithmetically instead of being stored per port.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, NamedTuple

from clusterforge.plan.fabric_layout import FabricLayout

SwitchRole = Literal["leaf", "spine", "core"]
LinkKind = Literal["node-leaf", "leaf-spine", "spine-core"]


class Switch(NamedTuple):
    """One switch. ``su``/``rail`` are set for leaves only. ``pod``: the pod of a leaf or spine.
    ``group``: the core group of a three-tier spine (its index in the pod) or of a core.
    ``position``: position of a leaf in its pod, of a spine in its pod, of a core in its group."""

    name: str
    role: SwitchRole
    su: int | None
    rail: int | None
    pod: int | None
    group: int | None
    position: int
    radix: int
    ports_used: int


class Link(NamedTuple):
    """One cable, from the lower tier (a) to the upper tier (b). Switch ports are 1..radix; the node
    end of a node-leaf cable uses the rail index (0-based NIC/rail number) as its port."""

    kind: LinkKind
    a_dev: str
    a_port: int
    b_dev: str
    b_port: int
    speed_gbps: int


@dataclass(frozen=True, slots=True)
class FailureDomains:
    """What a failure takes down: an SU (power/row) takes its leaves; a leaf takes one rail of its
    nodes (the nodes stay up on their other rails)."""

    su_leaves: tuple[tuple[str, ...], ...]  # index: SU number
    leaf_nodes: Mapping[str, tuple[str, ...]]


class NodePorts(Mapping[tuple[str, int], tuple[str, int]]):
    """(node, rail) -> (leaf name, leaf port), computed from the node's placement index."""

    __slots__ = ("_index", "_leaf_names", "_nodes", "_rails", "_su_size")

    def __init__(self, nodes: tuple[str, ...], su_size: int, rails: int, leaf_names: Sequence[str]) -> None:
        self._nodes = nodes
        self._index = {n: i for i, n in enumerate(nodes)}
        self._su_size = su_size
        self._rails = rails
        self._leaf_names = tuple(leaf_names)

    def __getitem__(self, key: tuple[str, int]) -> tuple[str, int]:
        node, rail = key
        i = self._index[node]
        if not (isinstance(rail, int) and 0 <= rail < self._rails):
            raise KeyError(key)
        su, slot = divmod(i, self._su_size)
        return self._leaf_names[su * self._rails + rail], slot + 1

    def __iter__(self) -> Iterator[tuple[str, int]]:
        rails = range(self._rails)
        return ((n, r) for n in self._nodes for r in rails)

    def __len__(self) -> int:
        return len(self._nodes) * self._rails

    def __contains__(self, key: object) -> bool:
        if not (isinstance(key, tuple) and len(key) == 2):
            return False
        node, rail = key
        return node in self._index and isinstance(rail, int) and 0 <= rail < self._rails

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodePorts):
            return (self._nodes, self._su_size, self._rails, self._leaf_names) == (
                other._nodes,
                other._su_size,
                other._rails,
                other._leaf_names,
            )
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodePorts({len(self._nodes)} nodes x {self._rails} rails)"


class Cabling(NamedTuple):
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    node_ports: NodePorts
    failure_domains: FailureDomains


def _w(count: int) -> int:
    """Zero-padding width so that names sort in index order."""
    return len(str(max(count - 1, 0)))


def cable(name: str, nodes: tuple[str, ...], lay: FabricLayout, radix: int, speed: int) -> Cabling:
    D, rails, n_su = lay.su_size, lay.rails, lay.scalable_units
    ws, wr = _w(n_su), _w(rails)
    leaf_names = [f"{name}-leaf-su{s:0{ws}d}-r{r:0{wr}d}" for s in range(n_su) for r in range(rails)]
    wp, wj = _w(lay.pods), _w(lay.spines_per_pod)
    spine_names = [
        [f"{name}-spine-p{p:0{wp}d}-s{j:0{wj}d}" for j in range(lay.spines_per_pod)] for p in range(lay.pods)
    ]
    wc = _w(lay.cores_per_group)
    core_names = [
        [f"{name}-core-g{g:0{wj}d}-c{c:0{wc}d}" for c in range(lay.cores_per_group)]
        for g in range(lay.core_groups)
    ]

    n = len(nodes)
    su_nodes = tuple(nodes[s * D : (s + 1) * D] for s in range(n_su))
    switches: list[Switch] = []
    links: list[Link] = []
    new_link = tuple.__new__  # skips NamedTuple.__new__'s Python-level argument handling

    # node -> leaf: node i sits in SU i // D, slot i % D, on leaf port slot+1 of each rail's leaf
    for i, node in enumerate(nodes):
        su, slot = divmod(i, D)
        base = su * rails
        for r in range(rails):
            links.append(new_link(Link, ("node-leaf", node, r, leaf_names[base + r], slot + 1, speed)))

    k1, s_per_pod = lay.links_per_leaf_spine, lay.spines_per_pod
    for su in range(n_su):
        for r in range(rails):
            leaf = leaf_names[su * rails + r]
            pod, pos = lay.pod_of_leaf(su, r)
            switches.append(
                Switch(
                    name=leaf,
                    role="leaf",
                    su=su,
                    rail=r,
                    pod=pod if lay.tiers > 1 else None,
                    group=None,
                    position=pos,
                    radix=radix,
                    ports_used=len(su_nodes[su]) + lay.uplinks_per_leaf,
                )
            )
            if lay.tiers == 1:
                continue
            spines_here = spine_names[pod]
            port = D + 1
            for j in range(s_per_pod):
                spine = spines_here[j]
                sport = pos * k1 + 1
                for t in range(k1):
                    links.append(new_link(Link, ("leaf-spine", leaf, port + t, spine, sport + t, speed)))
                port += k1

    k2, cpg, v = lay.links_per_spine_core, lay.cores_per_group, lay.spine_uplinks
    for p in range(lay.pods):
        present = lay.leaves_in_pod(p) * k1
        for j in range(s_per_pod):
            spine = spine_names[p][j]
            switches.append(
                Switch(spine, "spine", None, None, p, j if lay.tiers == 3 else None, j, radix, present + v)
            )
            if lay.tiers < 3:
                continue
            port = lay.spine_downlinks + 1
            cport = p * k2 + 1
            for c in range(cpg):
                core = core_names[j][c]
                for t in range(k2):
                    links.append(new_link(Link, ("spine-core", spine, port + t, core, cport + t, speed)))
                port += k2
    for g in range(lay.core_groups):
        for c in range(cpg):
            switches.append(Switch(core_names[g][c], "core", None, None, None, g, c, radix, lay.pods * k2))

    domains = FailureDomains(
        su_leaves=tuple(tuple(leaf_names[s * rails : (s + 1) * rails]) for s in range(n_su)),
        leaf_nodes=MappingProxyType(
            {leaf_names[s * rails + r]: su_nodes[s] for s in range(n_su) for r in range(rails)}
        ),
    )
    assert len(links) == n * rails + lay.leaves * lay.uplinks_per_leaf + lay.spines * v
    return Cabling(tuple(switches), tuple(links), NodePorts(nodes, D, rails, leaf_names), domains)
