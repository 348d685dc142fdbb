"""Which node pairs and node groups a burn-in iteration tests, from the plan's cabling (pure).

Rail-optimised fat trees cable rail *r* of every node of a scalable unit (SU) to that SU's rail-*r* leaf.
A pairwise `ib_write_bw` between two nodes on rail *r* therefore exercises both nodes' rail-*r* NIC, both
node-leaf cables and the leaf; when the two nodes sit on different leaves (different SUs) it also crosses
the leaves' uplinks and a spine (or core).

`select_pairs` builds, per fabric and rail:

* **intra-leaf ring**: the nodes of each leaf, in plan order, each paired with the next (the last with the
  first). Every node-leaf cable carries two tests against two different partners (one when the leaf has
  two nodes), so a bad node-side link shows as *all* of that node's pairs failing while its partners pass
  elsewhere - the localisation rule in `analysis`;
* **cross-leaf rings** (fabrics with several leaves per rail): node *i* of SU *s* with node *i* of SU
  *s + k* for k = 1 and k = ⌊S/2⌋ (a near and a far SU, so three-tier fabrics also cross blocks). Each leaf
  then sends at least as many distinct flows upward as it has nodes; under destination-spread routing
  (InfiniBand LFTs, ECMP hashing) that reaches its uplinks - probabilistically: which uplink a flow takes
  is decided by the fabric, not the hosts (see docs/burnin.md, "Coverage").

`schedule` splits the pairs into rounds in which no node appears twice on one rail (they run at once).
`coverage` checks a pair set against the cabling. `allreduce_groups` groups nodes for multi-node
all_reduce: per fabric, chunks of consecutive nodes (per SU), plus strided groups across SUs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Pair:
    """One pairwise bandwidth test: `a` is the client, `b` the server, on rail `rail` of `fabric`."""

    fabric: str
    rail: int
    a: str
    b: str
    leaf_a: str
    leaf_b: str
    kind: str  # "leaf" (both on one leaf) | "cross" (through the leaves' uplinks)

    @property
    def key(self) -> str:
        return f"{self.a}~{self.b}:rail{self.rail}"

    @property
    def leaves(self) -> tuple[str, ...]:
        return (self.leaf_a,) if self.leaf_a == self.leaf_b else (self.leaf_a, self.leaf_b)

    def has(self, node: str) -> bool:
        return node in (self.a, self.b)

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a


@dataclass(frozen=True)
class Cable:
    a_dev: str
    a_port: int
    b_dev: str
    b_port: int
    kind: str

    def label(self) -> str:
        return f"{self.a_dev}:{self.a_port} <-> {self.b_dev}:{self.b_port}"


@dataclass
class Coverage:
    leaves_total: int
    leaves_covered: int
    node_cables_total: int
    node_cables_covered: int
    uncovered_leaves: list[str] = field(default_factory=list)
    uncovered_cables: list[str] = field(default_factory=list)  # node-leaf cables on no tested path
    uplinks: dict[str, int] = field(default_factory=dict)  # leaf -> its uplink cables
    upward_flows: dict[str, int] = field(default_factory=dict)  # leaf -> cross-leaf tests through it
    notes: list[str] = field(default_factory=list)

    def starved_leaves(self) -> list[str]:
        """Leaves that have peers on other leaves of their rail but fewer cross-leaf tests than uplinks."""
        return sorted(leaf for leaf, n in self.upward_flows.items() if n < self.uplinks.get(leaf, 0))

    @property
    def complete(self) -> bool:
        return not self.uncovered_leaves and not self.uncovered_cables

    def as_dict(self) -> dict[str, Any]:
        return {
            "leaves": f"{self.leaves_covered}/{self.leaves_total}",
            "node_leaf_cables": f"{self.node_cables_covered}/{self.node_cables_total}",
            "uncovered_leaves": self.uncovered_leaves,
            "uncovered_cables": self.uncovered_cables,
            "leaves_with_fewer_upward_flows_than_uplinks": self.starved_leaves(),
            "notes": self.notes,
        }


def links_of(fabric: Mapping[str, Any]) -> list[Cable]:
    """The fabric's cables (`links` rows named by `link_fields`)."""
    names = list(fabric.get("link_fields") or ["kind", "a_dev", "a_port", "b_dev", "b_port", "speed_gbps"])
    out = []
    for row in fabric.get("links", []):
        d = dict(zip(names, row, strict=False)) if isinstance(row, list | tuple) else dict(row)
        out.append(
            Cable(str(d["a_dev"]), int(d["a_port"]), str(d["b_dev"]), int(d["b_port"]), str(d["kind"]))
        )
    return out


def rail_leaves(
    plan_doc: Mapping[str, Any], nodes: Iterable[str] | None = None
) -> dict[tuple[str, int], dict[str, list[str]]]:
    """(fabric, rail) -> leaf -> node names on it (plan order), from the node-leaf cables."""
    wanted = set(nodes) if nodes is not None else None
    order = {n["name"]: i for i, n in enumerate(plan_doc["nodes"])}
    fabric_of = {n["name"]: n["fabric"] for n in plan_doc["nodes"]}
    out: dict[tuple[str, int], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for fabric in plan_doc.get("fabrics", []):
        for c in links_of(fabric):
            if (
                c.kind != "node-leaf"
                or c.a_dev not in order
                or (wanted is not None and c.a_dev not in wanted)
            ):
                continue
            out[(fabric_of[c.a_dev], c.a_port)][c.b_dev].append(c.a_dev)
    for per_leaf in out.values():
        for leaf_nodes in per_leaf.values():
            leaf_nodes.sort(key=order.__getitem__)
    return {k: {leaf: list(v) for leaf, v in sorted(per_leaf.items())} for k, per_leaf in sorted(out.items())}


def _ring(items: list[str]) -> list[tuple[str, str]]:
    if len(items) < 2:
        return []
    if len(items) == 2:
        return [(items[0], items[1])]
    return [(items[i], items[(i + 1) % len(items)]) for i in range(len(items))]


def select_pairs(plan_doc: Mapping[str, Any], nodes: Iterable[str] | None = None) -> list[Pair]:
    """Pairs (client, server, rail) that cover every leaf and every node-leaf cable of the selected nodes."""
    out: list[Pair] = []
    seen: set[tuple[str, int, frozenset[str]]] = set()

    def add(fabric: str, rail: int, a: str, b: str, la: str, lb: str) -> None:
        key = (fabric, rail, frozenset((a, b)))
        if a == b or key in seen:
            return
        seen.add(key)
        out.append(Pair(fabric, rail, a, b, la, lb, "leaf" if la == lb else "cross"))

    for (fabric, rail), per_leaf in rail_leaves(plan_doc, nodes).items():
        for leaf, members in per_leaf.items():
            for a, b in _ring(members):
                add(fabric, rail, a, b, leaf, leaf)
        leaves = list(per_leaf)
        if len(leaves) < 2:
            continue
        for k in sorted({1, len(leaves) // 2} - {0}):
            for s, leaf in enumerate(leaves):
                far = leaves[(s + k) % len(leaves)]
                for i, a in enumerate(per_leaf[leaf]):
                    partners = per_leaf[far]
                    add(fabric, rail, a, partners[i % len(partners)], leaf, far)
    return out


def schedule(pairs: Iterable[Pair]) -> list[list[Pair]]:
    """Rounds of pairs that can run at once: no node twice on the same rail of a round (greedy)."""
    rounds: list[list[Pair]] = []
    busy: list[set[tuple[str, int]]] = []
    for p in sorted(pairs, key=lambda x: (x.kind != "leaf", x.fabric, x.rail, x.a, x.b)):
        ends = {(p.a, p.rail), (p.b, p.rail)}
        for i, used in enumerate(busy):
            if not used & ends:
                rounds[i].append(p)
                used |= ends
                break
        else:
            rounds.append([p])
            busy.append(set(ends))
    return rounds


def coverage(
    plan_doc: Mapping[str, Any], pairs: Iterable[Pair], nodes: Iterable[str] | None = None
) -> Coverage:
    """What a pair set exercises of the cabling of the selected nodes (every plan node by default)."""
    pairs = list(pairs)
    wanted = set(nodes) if nodes is not None else {n["name"] for n in plan_doc["nodes"]}
    node_cables: dict[tuple[str, int], str] = {}
    uplinks: dict[str, int] = defaultdict(int)
    for fabric in plan_doc.get("fabrics", []):
        for c in links_of(fabric):
            if c.kind == "node-leaf" and c.a_dev in wanted:
                node_cables[(c.a_dev, c.a_port)] = c.b_dev
            elif c.kind == "leaf-spine":
                uplinks[c.a_dev] += 1
    leaves = set(node_cables.values())
    hit_cables = {(n, p.rail) for p in pairs for n in (p.a, p.b)}
    hit_leaves = {leaf for p in pairs for leaf in p.leaves}
    multi = {
        leaf for per_leaf in rail_leaves(plan_doc, wanted).values() if len(per_leaf) > 1 for leaf in per_leaf
    }
    flows: dict[str, int] = {leaf: 0 for leaf in sorted(multi)}
    for p in pairs:
        if p.kind == "cross":
            flows[p.leaf_a] += 1
            flows[p.leaf_b] += 1
    cov = Coverage(
        leaves_total=len(leaves),
        leaves_covered=len(leaves & hit_leaves),
        node_cables_total=len(node_cables),
        node_cables_covered=len(set(node_cables) & hit_cables),
        uncovered_leaves=sorted(leaves - hit_leaves),
        uncovered_cables=sorted(
            f"{n} rail {r} <-> {leaf}" for (n, r), leaf in node_cables.items() if (n, r) not in hit_cables
        ),
        uplinks={leaf: uplinks.get(leaf, 0) for leaf in sorted(leaves)},
        upward_flows=flows,
    )
    single = sorted(leaf for leaf in leaves - multi if uplinks.get(leaf))
    if single:
        cov.notes.append(
            f"{len(single)} leaves are the only leaf of their rail among the selected nodes: no node-to-node "
            "test leaves them, so their uplinks are on no tested path (check those with switch-side counters)"
        )
    return cov


def allreduce_groups(
    plan_doc: Mapping[str, Any], size: int, nodes: Iterable[str] | None = None
) -> list[list[str]]:
    """Groups for multi-node all_reduce, never across fabrics: per fabric, chunks of `size` consecutive
    nodes (SU order), and when the fabric spans several SUs, strided groups taking nodes from different SUs.
    Every selected node is in at least one group; a fabric with one selected node has no group."""
    if size < 2:
        raise ValueError("an all_reduce group needs at least 2 nodes")
    wanted = set(nodes) if nodes is not None else None
    by_fabric: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for n in plan_doc["nodes"]:
        if wanted is None or n["name"] in wanted:
            by_fabric[n["fabric"]].append(n)
    groups: list[list[str]] = []
    for fabric in sorted(by_fabric):
        members = sorted(by_fabric[fabric], key=lambda n: (int(n.get("su", 1)), int(n.get("ordinal", 0))))
        names = [str(n["name"]) for n in members]
        if len(names) < 2:
            continue
        chunks = _chunks(names, size)
        groups += chunks
        if len({n.get("su") for n in members}) > 1 and len(chunks) > 1:
            k = len(chunks)
            strided = [names[i::k] for i in range(k)]
            groups += [g for g in strided if len(g) >= 2 and g not in chunks]
    return groups


def _chunks(names: list[str], size: int) -> list[list[str]]:
    count = max(1, -(-len(names) // size))
    base, extra = divmod(len(names), count)
    out, i = [], 0
    for c in range(count):
        n = base + (1 if c < extra else 0)
        out.append(names[i : i + n])
        i += n
    return [g for g in out if len(g) >= 2]
