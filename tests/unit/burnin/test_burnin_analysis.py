"""Statistics and localisation on synthetic distributions (analysis.py is pure)."""

from __future__ import annotations

import random

import pytest

from clusterforge.burnin import analysis as A
from clusterforge.burnin.pairs import Pair

CFG = A.AnalysisConfig()


def fleet(
    n: int, nominal: float, sigma: float, iterations: int, rng: random.Random
) -> dict[str, list[float]]:
    return {f"u{i:02d}": [nominal * (1 + rng.gauss(0, sigma)) for _ in range(iterations)] for i in range(n)}


def stats(units: dict[str, list[float]], cfg: A.AnalysisConfig = CFG) -> dict[str, A.UnitStats]:
    return A.fleet_stats({k: (v, 0) for k, v in units.items()}, cfg)


def test_primitives() -> None:
    assert A.median([3, 1, 2]) == 2 and A.median([1, 2, 3, 4]) == 2.5
    assert A.mad([1, 2, 3, 4, 100]) == 1
    assert A.robust_z(90, 100, 10) == pytest.approx(-0.6745)
    with pytest.raises(ValueError):
        A.robust_z(1, 1, 0)
    assert A.cv([10]) is None and A.cv([10, 10]) == 0
    assert A.cv([9, 10, 11]) == pytest.approx(0.1)
    assert A.floored_mad([100, 100, 100, 100], 0.01) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(20))
def test_slow_unit_is_the_only_outlier(seed: int) -> None:
    rng = random.Random(seed)
    units = fleet(32, 394.0, 0.004, 3, rng)
    units["u07"] = [v * 0.7 for v in units["u07"]]
    s = stats(units)
    assert [k for k, x in s.items() if x.low] == ["u07"]
    assert s["u07"].z is not None and s["u07"].z < -15  # 30 % below with a 1 % MAD floor: about -20
    assert s["u07"].fleet_size == 32 and s["u07"].fleet_median == pytest.approx(394, rel=0.01)


@pytest.mark.parametrize("seed", range(50))
def test_noisy_but_healthy_unit_is_not_flagged(seed: int) -> None:
    rng = random.Random(seed)
    units = fleet(32, 394.0, 0.004, 3, rng)
    units["u03"] = [394.0 * (1 + rng.gauss(0, 0.015)) for _ in range(3)]
    s = stats(units)
    assert not any(x.low or x.variable for x in s.values()), {k: (x.z, x.cv) for k, x in s.items() if x.low}


def test_mad_floor_keeps_a_tight_fleet_from_flagging_tiny_differences() -> None:
    units = {f"u{i}": [400.0, 400.0, 400.0] for i in range(8)}
    units["u0"] = [398.0] * 3  # 0.5 % below a fleet with zero spread
    assert not stats(units)["u0"].low
    no_floor = A.AnalysisConfig(mad_floor=0.0)
    assert stats(units, no_floor)["u0"].low  # without the floor any difference is infinitely many MADs
    units["u0"] = [370.0] * 3  # 7.5 % below: beyond 3.5 floored MADs (5.2 %)
    assert stats(units)["u0"].low


def test_variable_unit_by_coefficient_of_variation() -> None:
    units = {f"u{i}": [400.0, 401.0, 399.0] for i in range(8)}
    units["u1"] = [440.0, 400.0, 360.0]  # same median, 10 % CV
    s = stats(units)
    assert s["u1"].variable and not s["u1"].low
    assert sum(x.variable for x in s.values()) == 1
    short = {k: v[:2] for k, v in units.items()}  # fewer than min_samples_cv iterations: no CV verdict
    assert not any(x.variable for x in stats(short).values())


def test_small_fleets_get_no_fleet_verdict() -> None:
    s = stats({"a": [400.0] * 3, "b": [400.0] * 3, "c": [100.0] * 3})
    assert all(x.fleet_median is None and not x.low for x in s.values())
    assert A.bad_reason(s["c"], CFG, floor=380.0, unit="Gb/s") == "100 Gb/s below the SKU floor 380 Gb/s"


def test_failures_and_reasons() -> None:
    s = A.fleet_stats(
        {
            "ok": ([400.0] * 3, 0),
            "dead": ([], 3),
            "once": ([400.0, 400.0], 1),
            "x": ([401.0] * 3, 0),
            "y": ([399.0] * 3, 0),
        },
        CFG,
    )
    assert s["dead"].failed and A.bad_reason(s["dead"], CFG) == "failed in 3 of 3 iterations"
    assert A.bad_reason(s["once"], CFG) == "failed in 1 of 3 iterations"
    assert A.bad_reason(s["once"], A.AnalysisConfig(max_failures=1)) is None
    assert A.bad_reason(s["ok"], CFG) is None


def test_counter_growth_handles_resets() -> None:
    assert A.growth([0, 0, 0]) == 0
    assert A.growth([5, 5, 7, 10]) == 5
    assert A.growth([10, 12, 2, 3]) == 2 + 2 + 1  # reset after 12: the 2 seen since count
    assert A.growth([4]) == 0


# ---- localisation ------------------------------------------------------------------------------------


def ring(nodes: list[str], leaf: str = "L0", rail: int = 0) -> list[Pair]:
    if len(nodes) == 2:
        return [Pair("f", rail, nodes[0], nodes[1], leaf, leaf, "leaf")]
    return [Pair("f", rail, a, nodes[(i + 1) % len(nodes)], leaf, leaf, "leaf") for i, a in enumerate(nodes)]


def outcomes(pairs: list[Pair], bad: set[str]) -> list[A.PairOutcome]:
    """`bad`: nodes (or leaves) whose presence makes a pair bad."""
    return [A.PairOutcome(p, "low" if {p.a, p.b, *p.leaves} & bad else None) for p in pairs]


def test_node_whose_pairs_all_fail_on_a_rail_has_the_bad_link() -> None:
    pairs = ring(["n1", "n2", "n3", "n4", "n5"])
    sus = A.localise_pairs(outcomes(pairs, {"n3"}))
    assert [(s.scope, s.target, s.rail) for s in sus] == [("link", "n3", 0)]
    assert set(sus[0].pairs) == {"n2~n3:rail0", "n3~n4:rail0"}


def test_pairs_failing_through_one_leaf_point_at_the_leaf() -> None:
    pairs = ring(["n1", "n2", "n3", "n4"], "Lbad") + ring(["m1", "m2", "m3"], "Lgood")
    sus = A.localise_pairs(outcomes(pairs, {"Lbad"}))
    assert [(s.scope, s.target) for s in sus] == [("leaf", "Lbad")]
    assert len(sus[0].pairs) == 4


def test_known_bad_nic_explains_its_pairs() -> None:
    pairs = ring(["a", "b"])
    sus = A.localise_pairs(outcomes(pairs, {"a"}), {("a", 0): "loopback 276 Gb/s"})
    assert [(s.scope, s.target, s.why) for s in sus] == [("node", "a", "loopback 276 Gb/s")]


def test_lone_bad_pair_without_evidence_is_ambiguous() -> None:
    sus = A.localise_pairs(outcomes(ring(["a", "b"]), {"a"}))
    assert [(s.scope, s.target) for s in sus] == [("ambiguous", "a~b:rail0")]


def test_bad_cross_leaf_pairs_no_node_explains_point_at_the_path() -> None:
    pairs = [Pair("f", 2, f"s1n{i}", f"s2n{i}", "L1", "L2", "cross") for i in range(3)]
    pairs += ring(["s1n0", "s1n1", "s1n2"], "L1", 2) + ring(["s2n0", "s2n1", "s2n2"], "L2", 2)
    bad = [A.PairOutcome(p, "low" if p.kind == "cross" else None) for p in pairs]
    sus = A.localise_pairs(bad)
    assert [(s.scope, s.target, s.rail) for s in sus] == [("path", "L1 <-> L2", 2)]


def test_good_pairs_give_no_suspects() -> None:
    assert A.localise_pairs(outcomes(ring(["a", "b", "c"]), set())) == []


def test_config_round_trip() -> None:
    cfg = A.AnalysisConfig(z_max=4.0, cv_max=0.1)
    assert A.AnalysisConfig.from_dict(cfg.as_dict() | {"unknown": 1}) == cfg
