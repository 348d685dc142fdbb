"""Property tests of the fat-tree engine: cabling invariants over random sizes, radices, SU sizes and
oversubscription ratios, max-flow bisection and BFS hop counts on the generated cabling."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.plan.fabric import Fabric, FabricInput, plan_fabric, tier_limits

RATIOS = [(1, 1), (2, 1), (3, 1), (3, 2), (4, 1), (5, 4), (4, 3)]


def _mk(n: int, rails: int, su: int, radix: int, ratio: tuple[int, int] = (1, 1)) -> FabricInput:
    return FabricInput(
        "f",
        "infiniband",
        tuple(f"n{i}" for i in range(n)),
        rails,
        su_size=su,
        radix=radix,
        oversubscription=ratio,
    )


def check_invariants(inp: FabricInput, fab: Fabric) -> None:
    lay = fab.layout
    R, D, rails = inp.radix, inp.su_size, inp.rails
    d, u = fab.requested_oversubscription
    n_su = -(-len(inp.nodes) // D)
    by_name = {s.name: s for s in fab.switches}
    assert len(by_name) == len(fab.switches), "switch names are unique"
    roles = Counter(s.role for s in fab.switches)
    assert (roles["leaf"], roles["spine"], roles["core"]) == (fab.leaves, fab.spines, fab.cores)
    assert fab.leaves == n_su * rails and fab.scalable_units == n_su
    assert fab.endpoints == n_su * D * rails

    # tier rule
    two_max, three_max = tier_limits(R)
    if fab.leaves == 1:
        assert fab.tiers == 1
    elif fab.tiers == 2:
        assert fab.endpoints <= two_max
    else:
        assert fab.tiers == 3 and fab.endpoints <= three_max

    # every node NIC on exactly one leaf port, of its rail and SU, and node_ports agrees
    nic_links: dict[tuple[str, int], tuple[str, int]] = {}
    for lk in fab.links:
        if lk.kind == "node-leaf":
            key = (lk.a_dev, lk.a_port)
            assert key not in nic_links, f"NIC {key} cabled twice"
            nic_links[key] = (lk.b_dev, lk.b_port)
    assert len(nic_links) == len(inp.nodes) * rails == len(fab.node_ports)
    for i, node in enumerate(inp.nodes):
        for r in range(rails):
            leaf, port = nic_links[(node, r)]
            sw = by_name[leaf]
            assert (sw.role, sw.su, sw.rail) == ("leaf", i // D, r)
            assert port == i % D + 1 <= D
            assert fab.node_ports[(node, r)] == (leaf, port)

    # no switch port used twice; ports within 1..radix; ports_used is exact and <= radix
    ends: Counter[tuple[str, int]] = Counter()
    for lk in fab.links:
        if lk.kind != "node-leaf":
            ends[(lk.a_dev, lk.a_port)] += 1
        ends[(lk.b_dev, lk.b_port)] += 1
    assert max(ends.values()) == 1, "a switch port is cabled twice"
    per_switch = Counter(dev for dev, _ in ends)
    for sw in fab.switches:
        assert sw.ports_used == per_switch[sw.name] <= sw.radix == R
    assert all(1 <= p <= R for _, p in ends)

    # leaf -> spine: each leaf meets every spine of its pod, same number of links everywhere
    pod_spines: dict[int, set[str]] = defaultdict(set)
    for s in fab.switches:
        if s.role == "spine":
            assert s.pod is not None
            pod_spines[s.pod].add(s.name)
    ls: Counter[tuple[str, str]] = Counter()
    sc: Counter[tuple[str, str]] = Counter()
    for lk in fab.links:
        if lk.kind == "leaf-spine":
            ls[(lk.a_dev, lk.b_dev)] += 1
            assert lk.a_port > D, "leaf ports 1..su_size are reserved for nodes"
        elif lk.kind == "spine-core":
            sc[(lk.a_dev, lk.b_dev)] += 1
    if fab.tiers >= 2:
        assert set(ls.values()) == {lay.links_per_leaf_spine}
        reached: dict[str, set[str]] = defaultdict(set)
        for leaf, spine in ls:
            reached[leaf].add(spine)
        for s in fab.switches:
            if s.role == "leaf":
                assert s.pod is not None
                assert reached[s.name] == pod_spines[s.pod]
                if fab.tiers == 3:
                    assert all(by_name[x].pod == s.pod for x in reached[s.name])
                # achieved leaf oversubscription <= requested: D/up <= d/u
                up = lay.uplinks_per_leaf
                assert len(reached[s.name]) * lay.links_per_leaf_spine == up
                assert D * u <= d * up
    if fab.tiers == 3:
        assert set(sc.values()) == {lay.links_per_spine_core}
        group_cores: dict[int, set[str]] = defaultdict(set)
        for s in fab.switches:
            if s.role == "core":
                assert s.group is not None
                group_cores[s.group].add(s.name)
        reached_c: dict[str, set[str]] = defaultdict(set)
        for spine, core in sc:
            reached_c[spine].add(core)
        for s in fab.switches:
            if s.role == "spine":
                assert s.group is not None
                assert reached_c[s.name] == group_cores[s.group]
        assert lay.spine_downlinks * u <= d * lay.spine_uplinks
        assert fab.spine_oversubscription is not None
    # achieved (worst stage) <= requested
    ad, au = fab.oversubscription
    assert ad * u <= d * au

    # failure domains
    fd = fab.failure_domains
    assert len(fd.su_leaves) == n_su
    for su, leaves in enumerate(fd.su_leaves):
        assert [by_name[x].su for x in leaves] == [su] * rails
        for leaf in leaves:
            assert fd.leaf_nodes[leaf] == inp.nodes[su * D : (su + 1) * D]


def max_flow_bisection(inp: FabricInput, fab: Fabric) -> int:
    """Max flow from every NIC of the first half of the nodes to every NIC of the second half, on the
    generated cabling (each cable full duplex at its speed; NICs never forward)."""
    g = nx.DiGraph()

    def add(a: object, b: object, cap: int) -> None:
        for x, y in ((a, b), (b, a)):
            if g.has_edge(x, y):
                g[x][y]["capacity"] += cap
            else:
                g.add_edge(x, y, capacity=cap)

    for lk in fab.links:
        a = ("nic", lk.a_dev, lk.a_port) if lk.kind == "node-leaf" else lk.a_dev
        add(a, lk.b_dev, lk.speed_gbps)
    half = len(inp.nodes) // 2
    for i, node in enumerate(inp.nodes):
        for r in range(inp.rails):
            if i < half:
                g.add_edge("SRC", ("nic", node, r), capacity=inp.port_speed_gbps)
            else:
                g.add_edge(("nic", node, r), "SNK", capacity=inp.port_speed_gbps)
    if half == 0:
        return 0
    value, _ = nx.maximum_flow(g, "SRC", "SNK")
    return int(value)


def bfs_hops(fab: Fabric) -> tuple[int, int]:
    """(worst same-rail, worst any-rail) switch count between two leaves' GPUs, switches only."""
    g = nx.Graph()
    g.add_nodes_from(s.name for s in fab.switches)
    g.add_edges_from((lk.a_dev, lk.b_dev) for lk in fab.links if lk.kind != "node-leaf")
    leaves = [s for s in fab.switches if s.role == "leaf"]
    same = anyr = 1
    for a, b in itertools.combinations(leaves, 2):
        hops = nx.shortest_path_length(g, a.name, b.name) + 1
        anyr = max(anyr, hops)
        if a.rail == b.rail:
            same = max(same, hops)
    return same, anyr


@st.composite
def fabric_inputs(draw: st.DrawFn, max_nics: int) -> FabricInput:
    radix = draw(st.sampled_from(list(range(8, 145, 2))))
    d, u = draw(st.sampled_from(RATIOS))
    max_d = max(x for x in range(1, radix) if x + -(-x * u // d) <= radix)
    su = draw(st.integers(1, min(max_d, 48)))
    rails = draw(st.integers(1, 8))
    n = draw(st.integers(1, max(1, max_nics // rails)))
    return _mk(n, rails, su, radix, (d, u))


def _plan_or_reject(inp: FabricInput) -> Fabric | None:
    try:
        return plan_fabric(inp)
    except ValueError as e:
        # only the documented impossibilities: too many endpoints/pods for the radix
        assert "radix" in str(e)
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric_inputs(max_nics=1200))
def test_invariants_hold(inp: FabricInput) -> None:
    fab = _plan_or_reject(inp)
    if fab is not None:
        check_invariants(inp, fab)


@settings(max_examples=40, deadline=None)
@given(fabric_inputs(max_nics=600))
def test_deterministic(inp: FabricInput) -> None:
    a, b = _plan_or_reject(inp), _plan_or_reject(inp)
    assert a == b
    if a is not None and b is not None:
        assert a.links == b.links and a.switches == b.switches and dict(a.node_ports) == dict(b.node_ports)


@st.composite
def small_fabric_inputs(draw: st.DrawFn) -> FabricInput:
    radix = draw(st.sampled_from([8, 10, 12, 16]))
    d, u = draw(st.sampled_from(RATIOS))
    max_d = max(x for x in range(1, radix) if x + -(-x * u // d) <= radix)
    su = draw(st.integers(1, max_d))
    rails = draw(st.integers(1, 3))
    n = draw(st.integers(1, 120 // rails))
    return _mk(n, rails, su, radix, (d, u))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_fabric_inputs())
def test_bisection_is_the_max_flow(inp: FabricInput) -> None:
    fab = _plan_or_reject(inp)
    if fab is not None:
        assert max_flow_bisection(inp, fab) == fab.bisection_gbps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_fabric_inputs())
def test_hops_match_bfs(inp: FabricInput) -> None:
    fab = _plan_or_reject(inp)
    if fab is not None:
        assert bfs_hops(fab) == (fab.max_switch_hops, fab.max_switch_hops_any_rail)


# A few fixed small fabrics (radix 8, 2 rails, SUs of 4 nodes), two and three tiers, 1:1 and
# oversubscribed, full and partial SUs: invariants, max-flow bisection and BFS hops.
SMALL = [
    (16, (1, 1), 2),  # 4 SUs, N = 32 = 8^2/2: the largest two-tier fabric
    (18, (1, 1), 3),  # 5 SUs (last partial), N = 40 > 32: three tiers
    (40, (1, 1), 3),  # 10 SUs
    (64, (1, 1), 3),  # 16 SUs, N = 128 = 8^3/4: the largest three-tier fabric
    (16, (3, 1), 2),
    (40, (3, 1), 3),
    (64, (3, 1), 3),
]


@pytest.mark.parametrize(("n", "ratio", "tiers"), SMALL)
def test_small_fabrics_flow_and_hops(n: int, ratio: tuple[int, int], tiers: int) -> None:
    inp = _mk(n, 2, 4, 8, ratio)
    fab = plan_fabric(inp)
    assert fab.tiers == tiers
    check_invariants(inp, fab)
    assert max_flow_bisection(inp, fab) == fab.bisection_gbps
    assert bfs_hops(fab) == (fab.max_switch_hops, fab.max_switch_hops_any_rail)
    if ratio == (1, 1):
        assert fab.bisection_gbps == n // 2 * 2 * 400  # N/2 x port speed
    else:
        assert fab.bisection_gbps < n // 2 * 2 * 400
