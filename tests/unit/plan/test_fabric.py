"""Hand-computed cases and the published NVIDIA DGX SuperPOD figures for the fat-tree engine.

Notation (docs/fabric.md): R radix, D su_size, d:u oversubscription, U = ceil(D*u/d) leaf uplinks,
L leaves = SUs x rails, N = SUs x D x rails endpoints, S spines, k links per leaf-spine pair.
"""

from __future__ import annotations

import pytest

from clusterforge.plan.fabric import FabricInput, plan_fabric, tier_limits


def _inp(n: int, rails: int = 8, **kw: object) -> FabricInput:
    return FabricInput("ib0", "infiniband", tuple(f"gpu{i:05d}" for i in range(n)), rails, **kw)  # type: ignore[arg-type]


def test_tier_limits() -> None:
    assert tier_limits(64) == (2048, 65536)  # 64^2/2, 64^3/4
    assert tier_limits(144) == (10368, 746496)
    assert tier_limits(8) == (32, 128)


def test_one_su_radix_64() -> None:
    # 32 nodes x 8 rails, R=64, 1:1. D=32, U=32 (D+U=64=R). L = 1 SU x 8 rails = 8 leaves.
    # Uplinks 8 x 32 = 256; S >= 256/64 = 4, and 4 divides 32 -> S=4, k=32/4=8 links per pair;
    # each spine uses 8 leaves x 8 = 64 ports. More than one leaf -> 2 tiers (cross-rail needs spines).
    f = plan_fabric(_inp(32))
    assert (f.tiers, f.leaves, f.spines, f.cores) == (2, 8, 4, 0)
    assert (f.layout.uplinks_per_leaf, f.layout.links_per_leaf_spine) == (32, 8)
    assert all(s.ports_used == 64 for s in f.switches)
    assert f.cable_counts == {"node-leaf": 256, "leaf-spine": 256, "spine-core": 0}
    # halves are nodes 0-15 vs 16-31: on every leaf 16 send to 16 locally -> 16 x 8 rails x 400
    assert f.bisection_gbps == 256 // 2 * 400 == 51_200
    # same rail: one SU -> every same-rail pair shares a leaf; cross-rail goes leaf-spine-leaf
    assert (f.max_switch_hops, f.max_switch_hops_any_rail) == (1, 3)
    assert f.oversubscription == (1, 1)


def test_four_su() -> None:
    # 128 nodes = 4 SUs: L=32, uplinks 32 x 32 = 1024, S >= 1024/64 = 16, 16 | 32 -> S=16, k=2.
    f = plan_fabric(_inp(128))
    assert (f.tiers, f.leaves, f.spines, f.cores, f.layout.links_per_leaf_spine) == (2, 32, 16, 0, 2)
    assert f.bisection_gbps == 1024 // 2 * 400 == 204_800
    assert f.max_switch_hops == 3


def test_sixteen_su_three_tiers() -> None:
    # 512 nodes = 16 SUs, N = 4096 > 64^2/2 = 2048 -> 3 tiers (<= 64^3/4 = 65536).
    # Spine at 1:1 takes 32 down + 32 up. Rail-aligned pods: one pod per rail holding all 16 SUs:
    # 16 leaves x 32 uplinks = 512 -> S_p >= 512/32 = 16, 16 | 32 -> S_p = 16, k1 = 2; 8 pods x 16 =
    # 128 spines. Core group j = spine j of the 8 pods: 8 x 32 = 256 uplinks -> >= 256/64 = 4 cores,
    # 4 | 32 -> 4 cores, 8 links per spine-core pair; 16 groups x 4 = 64 cores.
    # (Two pods per rail of 8 SUs also gives 128 + 64; the tie goes to fewer pods.)
    f = plan_fabric(_inp(512))
    lay = f.layout
    assert (f.tiers, f.leaves, f.spines, f.cores) == (3, 128, 128, 64)
    assert (lay.pods, lay.sus_per_pod, lay.spines_per_pod, lay.links_per_leaf_spine) == (8, 16, 16, 2)
    assert (lay.spine_uplinks, lay.cores_per_group, lay.links_per_spine_core) == (32, 4, 8)
    assert f.cable_counts == {"node-leaf": 4096, "leaf-spine": 4096, "spine-core": 4096}
    assert f.bisection_gbps == 4096 // 2 * 400
    # every rail fits one pod: same-rail traffic never climbs to the cores
    assert (f.max_switch_hops, f.max_switch_hops_any_rail) == (3, 5)


def test_two_to_one() -> None:
    # 128 nodes, 2:1: U = ceil(32 x 1/2) = 16. Uplinks 32 x 16 = 512 -> S = 8, 8 | 16, k = 2.
    # Halves = SUs 0-1 vs 2-3: each sending leaf passes min(32, 16) up: 2 SUs x 8 rails x 16 links.
    f = plan_fabric(_inp(128, oversubscription=(2, 1)))
    assert (f.tiers, f.leaves, f.spines, f.layout.uplinks_per_leaf) == (2, 32, 8, 16)
    assert f.oversubscription == f.leaf_oversubscription == (2, 1)
    assert f.bisection_gbps == 2 * 8 * 16 * 400 == 102_400  # half of the 1:1 figure


def test_three_to_one_rounds_uplinks_up_to_save_spines() -> None:
    # 3:1: U = ceil(32/3) = 11 -> 8 x 11 = 88 uplinks, S >= 2, but 11 is prime so S = 11 (k=1).
    # One more free leaf port per leaf: U = 12 -> 96 uplinks, S >= 2, 2 | 12 -> S = 2, k = 6.
    # Fewest switches wins: 2 spines; achieved 32:12 = 8:3 <= 3:1.
    f = plan_fabric(_inp(32, oversubscription=(3, 1)))
    assert (f.spines, f.layout.uplinks_per_leaf, f.layout.links_per_leaf_spine) == (2, 12, 6)
    assert f.oversubscription == (8, 3)
    assert f.requested_oversubscription == (3, 1)


def test_partial_su_is_provisioned_full() -> None:
    # 40 nodes = SU0 full + SU1 with 8 nodes -> provisioned as 2 full SUs: L=16, S=512/64=8, k=4.
    f = plan_fabric(_inp(40))
    assert (f.scalable_units, f.leaves, f.spines, f.endpoints, f.connected_endpoints) == (2, 16, 8, 512, 320)
    assert f.cable_counts == {"node-leaf": 320, "leaf-spine": 512, "spine-core": 0}
    leaf = next(s for s in f.switches if s.su == 1)
    assert leaf.ports_used == 8 + 32  # 8 nodes + the full SU's 32 uplinks
    # halves 20/20: SU0 pairs 12 locally and sends 8 up; SU1 receives 8 -> 20 per rail, 1:1
    assert f.bisection_gbps == 20 * 8 * 400
    assert f.node_ports[("gpu00039", 7)] == ("ib0-leaf-su1-r7", 8)
    assert f.failure_domains.leaf_nodes["ib0-leaf-su1-r0"] == tuple(f"gpu{i:05d}" for i in range(32, 40))


def test_two_three_tier_boundary() -> None:
    # 8 SUs: N = 8 x 32 x 8 = 2048 = 64^2/2 -> still 2 tiers: 64 leaves, S = 2048/64 = 32, k = 1.
    f = plan_fabric(_inp(256))
    assert (f.tiers, f.leaves, f.spines, f.layout.links_per_leaf_spine) == (2, 64, 32, 1)
    # 9 SUs (one node into the 9th SU is enough): N = 2304 > 2048 -> 3 tiers.
    # Candidates (U=32, spine cap 32 down):
    #   1 pod/rail of 9 SUs: S_p >= 9x32/32 = 9 -> 16 (k1=2), down 18, V 18; group: 8 x 18 / 64 -> 3
    #     cores; 128 spines + 48 cores.
    #   3 pods/rail of 3 SUs: S_p >= 3 x 32 / 32 = 3 -> 4 (k1=8), down 24, V 24; 24 pods x 24 / 64 = 9 ->
    #     12 | 24 -> 12 cores/group: 96 spines + 48 cores = 144  <- fewest
    #   (5 pods of 2 SUs ties at 80 + 64 = 144; the tie goes to fewer pods)
    f = plan_fabric(_inp(257))
    lay = f.layout
    assert (f.tiers, f.leaves, f.spines, f.cores) == (3, 72, 96, 48)
    assert (lay.pods_per_rail, lay.sus_per_pod, lay.spines_per_pod, lay.links_per_leaf_spine) == (3, 3, 4, 8)
    assert (lay.spine_downlinks, lay.spine_uplinks, lay.cores_per_group, lay.links_per_spine_core) == (
        24,
        24,
        12,
        2,
    )
    assert (f.max_switch_hops, f.max_switch_hops_any_rail) == (5, 5)


def test_12500_nodes_radix_144() -> None:
    # 12,500 nodes x 8 rails, R=144: SUs = ceil(12500/32) = 391, N = 391 x 256 = 100,096:
    # 144^2/2 = 10,368 < N <= 144^3/4 = 746,496 -> 3 tiers. Spine cap 72 down at 1:1.
    # Pods per rail >= ceil(391/72) = 6 -> 6 pods of ceil(391/6) = 66 SUs (last one 61).
    # S_p: 66 x 32 / 72 -> >= 29.3 -> 32 (divides 32), k1 = 1; spine 66 down + 66 up = 132 ports.
    # 48 pods x 32 = 1536 spines. Core group j: 48 x 66 = 3168 uplinks -> >= 22 cores, 22 | 66,
    # 3 links per spine-core pair, 48 x 3 = 144 core ports; 32 groups x 22 = 704 cores.
    f = plan_fabric(_inp(12_500, radix=144))
    lay = f.layout
    assert (f.tiers, f.scalable_units, f.endpoints, f.leaves, f.spines, f.cores) == (
        3,
        391,
        100_096,
        3128,
        1536,
        704,
    )
    assert (lay.pods, lay.sus_per_pod, lay.spines_per_pod, lay.spine_uplinks, lay.cores_per_group) == (
        48,
        66,
        32,
        66,
        22,
    )
    assert f.cable_counts == {"node-leaf": 100_000, "leaf-spine": 3128 * 32, "spine-core": 1536 * 66}
    assert len(f.links) == sum(f.cable_counts.values())
    assert f.bisection_gbps == 100_000 // 2 * 400
    assert (f.max_switch_hops, f.max_switch_hops_any_rail) == (5, 5)
    assert f.node_ports[("gpu12499", 3)] == ("ib0-leaf-su390-r3", 12499 % 32 + 1)


# --- published NVIDIA DGX SuperPOD figures (independent check; the engine computes, never looks up) ---
# DGX SuperPOD H100 RA, "Network Fabrics", Table 4 "Compute fabric component count":
# https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html
# QM9700 (64 x NDR 400G), 32-node SUs, one node slot given to UFM (31, 63, 95, 127 nodes; the
# "Compute and UFM" cables are node cables + 4 UFM ports).
H100_TABLE4 = [  # SUs, nodes, GPUs, leaf, spine, compute+UFM cables, spine-leaf cables
    (1, 31, 248, 8, 4, 252, 256),
    (2, 63, 504, 16, 8, 508, 512),
    (3, 95, 760, 24, 16, 764, 768),
    (4, 127, 1016, 32, 16, 1020, 1024),
]


@pytest.mark.parametrize(("sus", "nodes", "gpus", "leaf", "spine", "node_cables", "leaf_spine"), H100_TABLE4)
def test_dgx_superpod_h100(
    sus: int, nodes: int, gpus: int, leaf: int, spine: int, node_cables: int, leaf_spine: int
) -> None:
    f = plan_fabric(_inp(nodes))
    assert (f.scalable_units, f.connected_endpoints, f.tiers) == (sus, gpus, 2)
    assert (f.leaves, f.spines, f.cores) == (leaf, spine, 0)
    assert f.cable_counts["node-leaf"] + 4 == node_cables
    assert f.cable_counts["leaf-spine"] == leaf_spine


# DGX SuperPOD B200 RA, "DGX SuperPOD Architecture", larger SuperPOD component counts:
# https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html
B200_TABLE = [  # SUs, nodes, GPUs, leaf, spine, core, node-leaf, leaf-spine, spine-core
    (2, 64, 512, 16, 8, 0, 512, 512, 0),
    (4, 128, 1024, 32, 16, 0, 1024, 1024, 0),
    (8, 256, 2048, 64, 32, 0, 2048, 2048, 0),
    (16, 512, 4096, 128, 128, 64, 4096, 4096, 4096),
    (32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192),
    (64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384),
]


@pytest.mark.parametrize(("sus", "nodes", "gpus", "leaf", "spine", "core", "nl", "ls", "sc"), B200_TABLE)
def test_dgx_superpod_b200(
    sus: int, nodes: int, gpus: int, leaf: int, spine: int, core: int, nl: int, ls: int, sc: int
) -> None:
    f = plan_fabric(_inp(nodes))
    assert (f.scalable_units, f.endpoints, f.tiers) == (sus, gpus, 2 if core == 0 else 3)
    assert (f.leaves, f.spines, f.cores) == (leaf, spine, core)
    assert f.cable_counts == {"node-leaf": nl, "leaf-spine": ls, "spine-core": sc}


# --- errors and edge cases ---


def test_single_leaf_is_one_tier() -> None:
    f = plan_fabric(_inp(20, rails=1))
    assert (f.tiers, f.leaves, f.spines, f.cores, len(f.links)) == (1, 1, 0, 0, 20)
    assert f.bisection_gbps == 10 * 400 and f.max_switch_hops == 1
    assert f.switches[0].ports_used == 20


def test_leaf_ports_exceeded() -> None:
    msg = r"33 downlinks .* \+ 33 uplinks .* = 66 ports, more than the radix 64"
    with pytest.raises(ValueError, match=msg):
        plan_fabric(_inp(64, su_size=33))
    plan_fabric(_inp(64, su_size=33, oversubscription=(2, 1)))  # 33 + 17 = 50 fits


def test_too_many_endpoints_names_limit_and_radix() -> None:
    # radix 16, su_size 8 (8 down + 8 up), 8 rails: N = SUs x 64; 17 SUs -> 1088 > 16^3/4 = 1024.
    # Smallest even radix with r^3/4 >= 1088 is 18 (18^3/4 = 1458).
    with pytest.raises(ValueError, match=r"1088 endpoints .* radix\^3/4 = 1024 for radix 16; .* radix >= 18"):
        plan_fabric(_inp(17 * 8, su_size=8, radix=16))


def test_underfilled_leaves_hit_the_pod_limit_with_a_clear_error() -> None:
    # su_size 2 on radix 16: N = 24 SUs x 2 x 8 = 384 <= 1024, but at most 16 pods can meet a core
    # group and a pod holds at most 8 leaves of one rail: 8 rails x ceil(24/8) = 24 pods > 16.
    with pytest.raises(ValueError, match="cannot be wired as a three-tier"):
        plan_fabric(_inp(48, su_size=2, radix=16))


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"oversubscription": (1, 2)}, "down >= up"),
        ({"oversubscription": (0, 0)}, "down >= up"),
        ({"rails": 0}, "rails must be"),
        ({"su_size": 0}, "su_size must be"),
        ({"radix": 1}, "radix must be"),
    ],
)
def test_bad_inputs(kw: dict[str, object], msg: str) -> None:
    base: dict[str, object] = {"name": "ib0", "kind": "infiniband", "nodes": ("a", "b"), "rails": 8}
    base.update(kw)
    with pytest.raises(ValueError, match=msg):
        plan_fabric(FabricInput(**base))  # type: ignore[arg-type]


def test_duplicate_and_empty_nodes() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        plan_fabric(FabricInput("ib0", "infiniband", ("a", "b", "a"), 8))
    with pytest.raises(ValueError, match="no nodes"):
        plan_fabric(FabricInput("ib0", "infiniband", (), 8))


def test_names_ports_and_roce() -> None:
    f = plan_fabric(
        FabricInput(
            "eth1",
            "roce",
            tuple(f"h{i}" for i in range(64)),
            2,
            su_size=16,
            radix=32,
            port_speed_gbps=800,
            switch_model="SN5600",
        )
    )
    assert (f.kind, f.switch_model, f.tiers) == ("roce", "SN5600", 2)
    names = [s.name for s in f.switches]
    assert names[:2] == ["eth1-leaf-su0-r0", "eth1-leaf-su0-r1"]
    assert names == sorted(names, key=lambda x: ("leaf" not in x, x))  # zero-padded, sortable
    assert all(lk.speed_gbps == 800 for lk in f.links)
    first = f.links[0]
    assert first == ("node-leaf", "h0", 0, "eth1-leaf-su0-r0", 1, 800)
    up = [lk for lk in f.links if lk.kind == "leaf-spine" and lk.a_dev == "eth1-leaf-su0-r0"]
    assert [lk.a_port for lk in up] == list(range(17, 33))  # uplinks follow the 16 node ports
    assert ("h0", 2) not in f.node_ports and ("nope", 0) not in f.node_ports
    with pytest.raises(KeyError):
        f.node_ports[("h0", 2)]
