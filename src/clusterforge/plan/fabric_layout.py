"""Switch-count arithmetic of a rail-optimized fat tree: how many leaves, spines and cores, and how
they group into pods and core groups. Integers only: no names, no cables (see fabric_cabling).

The rules are derived in docs/fabric.md; in short:

* one leaf per rail per scalable unit (SU), ``su_size`` downlinks, ``uplinks_per_leaf`` uplinks;
* two tiers: one pod holding every leaf; each leaf spreads its uplinks evenly over *all* spines;
* three tiers: rail-aligned pods (the leaves of one rail in a block of consecutive SUs) fully meshed
  with the pod's spines; spine ``j`` of every pod is fully meshed with core group ``j``;
* every leaf-spine and spine-core pair carries the same integer number of links;
* among the arrangements that satisfy the port and oversubscription constraints, the one with the
  fewest switches wins; ties go to fewer pods (rail locality), then to fewer cables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import gcd


@dataclass(frozen=True, slots=True)
class FabricLayout:
    """The shape of a fabric, as counts. ``pods`` is 1 for two tiers, 0 for one tier."""

    tiers: int
    scalable_units: int
    rails: int
    su_size: int  # downlinks per leaf (a partial last SU is provisioned full)
    uplinks_per_leaf: int
    pods: int
    pods_per_rail: int  # three tiers: pods of each rail; otherwise 0
    sus_per_pod: int  # three tiers: SUs per pod (the last pod of a rail may hold fewer)
    spines_per_pod: int
    links_per_leaf_spine: int
    spine_downlinks: int  # down ports a spine of a full pod uses
    spine_uplinks: int  # 0 below three tiers
    cores_per_group: int  # three tiers: cores per core group (one group per spine index)
    links_per_spine_core: int

    @property
    def leaves(self) -> int:
        return self.scalable_units * self.rails

    @property
    def spines(self) -> int:
        return self.pods * self.spines_per_pod

    @property
    def core_groups(self) -> int:
        return self.spines_per_pod if self.tiers == 3 else 0

    @property
    def cores(self) -> int:
        return self.core_groups * self.cores_per_group

    @property
    def switches(self) -> int:
        return self.leaves + self.spines + self.cores

    @property
    def endpoints(self) -> int:
        """Provisioned endpoints N: full SUs times su_size times rails."""
        return self.scalable_units * self.su_size * self.rails

    @property
    def leaves_per_pod(self) -> int:
        if self.tiers == 3:
            return self.sus_per_pod
        return self.leaves if self.tiers == 2 else 1

    def pod_of_leaf(self, su: int, rail: int) -> tuple[int, int]:
        """(pod index, position of the leaf inside its pod)."""
        if self.tiers == 3:
            block, pos = divmod(su, self.sus_per_pod)
            return block * self.rails + rail, pos
        return 0, su * self.rails + rail

    def leaves_in_pod(self, pod: int) -> int:
        """Leaves actually present in ``pod`` (the last block of SUs may be short)."""
        if self.tiers != 3:
            return self.leaves
        block = pod // self.rails
        return min(self.sus_per_pod, self.scalable_units - block * self.sus_per_pod)


def reduce_ratio(down: int, up: int) -> tuple[int, int]:
    g = gcd(down, up)
    return (down // g, up // g) if g else (down, up)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def tier_limits(radix: int) -> tuple[int, int]:
    """(two_tier_max, three_tier_max) endpoints of a non-blocking fat tree of ``radix``-port switches:
    radix²/2 and radix³/4."""
    if radix < 2:
        raise ValueError(f"radix must be at least 2, got {radix}")
    return radix * radix // 2, radix**3 // 4


@lru_cache(maxsize=1024)
def _divisors(n: int) -> tuple[int, ...]:
    small = [i for i in range(1, int(n**0.5) + 1) if n % i == 0]
    return tuple(sorted({*small, *(n // i for i in small)}))


def smallest_divisor_at_least(n: int, lo: int) -> int | None:
    """Smallest divisor of ``n`` that is >= ``lo`` (None when lo > n)."""
    for q in _divisors(n):
        if q >= lo:
            return q
    return None


def spine_down_capacity(radix: int, down: int, up: int) -> int:
    """Most downlinks x a spine can take with ceil(x*up/down) uplinks still fitting in ``radix``."""
    x = radix * down // (down + up)
    while x > 0 and x + ceil_div(x * up, down) > radix:
        x -= 1
    return x


def one_tier(su_size: int) -> FabricLayout:
    return FabricLayout(1, 1, 1, su_size, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0)


def two_tier(radix: int, su_size: int, min_uplinks: int, n_su: int, rails: int) -> FabricLayout | None:
    """Fewest spines S with: S divides the leaf uplinks (equal links per leaf-spine pair) and
    S >= ceil(total uplinks / radix). Leaf uplinks may grow above the minimum (free leaf ports only)
    when that saves spines. None when no spine layer of ``radix`` ports can reach every leaf."""
    leaves = n_su * rails
    best: tuple[tuple[int, int], FabricLayout] | None = None
    for up in range(min_uplinks, radix - su_size + 1):
        spines = smallest_divisor_at_least(up, ceil_div(leaves * up, radix))
        if spines is None:
            continue
        key = (spines, up)
        if best is None or key < best[0]:
            k = up // spines
            layout = FabricLayout(2, n_su, rails, su_size, up, 1, 0, n_su, spines, k, leaves * k, 0, 0, 0)
            best = (key, layout)
    return best[1] if best else None


def three_tier(
    radix: int, su_size: int, min_uplinks: int, n_su: int, rails: int, ratio: tuple[int, int]
) -> FabricLayout | None:
    """Search leaf uplinks U, pods per rail p and spine uplinks V for the fewest switches.

    For each candidate: pods hold m = ceil(n_su/p) SUs of one rail; the pod has the fewest spines
    S_p dividing U with m*(U/S_p) spine downlinks fitting the spine's downlink capacity; each core
    group j takes spine j of every pod (rails*p of them) on the fewest cores C dividing V with
    rails*p*(V/C) <= radix. None when no candidate fits."""
    down_r, up_r = ratio
    cap = spine_down_capacity(radix, down_r, up_r)
    if cap < 1:
        return None
    best: tuple[tuple[int, int, int, int], FabricLayout] | None = None
    max_pods_per_rail = min(n_su, radix // rails)
    for up in range(min_uplinks, radix - su_size + 1):
        for p in range(ceil_div(n_su, cap), max_pods_per_rail + 1):
            m = ceil_div(n_su, p)
            if ceil_div(n_su, m) != p:  # the last block would be empty: same as a smaller p
                continue
            per_pair_max = cap // m
            spines = smallest_divisor_at_least(up, ceil_div(up, per_pair_max))
            if spines is None:
                continue
            k1 = up // spines
            s_down = m * k1
            n_pods = rails * p
            if best is not None and spines * (n_pods + 1) > best[0][0]:
                continue  # cannot beat the best even with a single core per group
            best_cores = radix + 1
            for v in range(max(1, ceil_div(s_down * up_r, down_r)), radix - s_down + 1):
                floor_cores = ceil_div(n_pods * v, radix)  # non-decreasing in v
                if floor_cores >= best_cores:
                    break
                cores = smallest_divisor_at_least(v, floor_cores)
                if cores is None or cores >= best_cores:
                    continue
                best_cores = cores
                total = n_pods * spines + spines * cores
                key = (total, p, up, v)
                if best is None or key < best[0]:
                    layout = FabricLayout(
                        3, n_su, rails, su_size, up, n_pods, p, m, spines, k1, s_down, v, cores, v // cores
                    )
                    best = (key, layout)
    return best[1] if best else None


def bisection_links(lay: FabricLayout, n_nodes: int) -> int:
    """Max flow, in port-speed units, from the first n_nodes//2 nodes (all their rails) to the rest.

    The fabric behaves as a tree for fluid flows: every leaf of a pod meets every pod spine with the
    same number of links, and spine j of every pod meets every core of group j alike, so traffic can
    be split evenly and the only cuts that bind are a leaf's uplinks (U) and a pod's uplinks
    (spines_per_pod * spine_uplinks). On a tree the max flow is found bottom-up: pair senders with
    receivers under the lowest common switch, pass the unpaired excess up, capped by the uplinks.
    Rails are symmetric (node i occupies the same slot on every rail), so one rail is computed and
    multiplied by ``rails``."""
    D, half = lay.su_size, n_nodes // 2
    leaf_up: list[tuple[int, int]] = []  # per SU: (senders, receivers) passed up from the leaf
    matched = 0
    for s in range(lay.scalable_units):
        lo, hi = s * D, min((s + 1) * D, n_nodes)
        a = max(0, min(hi, half) - lo)
        b = max(0, hi - max(lo, half))
        local = min(a, b)
        matched += local
        leaf_up.append((min(a - local, lay.uplinks_per_leaf), min(b - local, lay.uplinks_per_leaf)))
    if lay.tiers == 3:
        pod_cap = lay.spines_per_pod * lay.spine_uplinks
        groups = [leaf_up[i : i + lay.sus_per_pod] for i in range(0, len(leaf_up), lay.sus_per_pod)]
        pod_up: list[tuple[int, int]] = []
        for g in groups:
            a = sum(x for x, _ in g)
            b = sum(y for _, y in g)
            local = min(a, b)
            matched += local
            pod_up.append((min(a - local, pod_cap), min(b - local, pod_cap)))
        leaf_up = pod_up
    # the root (spine layer in two tiers, core layer in three) pairs what reached it; with rails
    # pooled it sees rails x (sum of each rail), so the per-rail min times rails is exact
    matched += min(sum(x for x, _ in leaf_up), sum(y for _, y in leaf_up))
    return matched * lay.rails


def max_switch_hops(lay: FabricLayout) -> tuple[int, int]:
    """(worst same-rail GPU pair, worst pair on any rails), counted in switches traversed and
    without NVLink/PXN forwarding inside a node."""
    if lay.tiers == 1:
        return 1, 1
    if lay.tiers == 2:
        return (1 if lay.scalable_units == 1 else 3), 3
    same_rail = 1 if lay.scalable_units == 1 else (3 if lay.pods_per_rail == 1 else 5)
    return same_rail, 5
