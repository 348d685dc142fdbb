"""Pair selection and all_reduce groups on the example specs' plans: every leaf and node cable covered."""

from __future__ import annotations

from collections import defaultdict

import pytest
from burnin_data import SPECS, plan_of

from clusterforge.burnin import pairs as P


@pytest.mark.parametrize("spec", SPECS)
def test_every_leaf_and_node_cable_is_covered(spec: str) -> None:
    plan = plan_of(spec)
    chosen = P.select_pairs(plan)
    cov = P.coverage(plan, chosen)
    leaves = {r["leaf"] for n in plan["nodes"] for r in n["rails"]}
    assert cov.complete, cov.as_dict()
    assert cov.leaves_covered == cov.leaves_total == len(leaves)
    assert cov.node_cables_covered == cov.node_cables_total == sum(len(n["rails"]) for n in plan["nodes"])
    # pairs stay on one rail of one fabric, between two different nodes, as the plan cables them
    by_name = {n["name"]: n for n in plan["nodes"]}
    for p in chosen:
        a, b = by_name[p.a], by_name[p.b]
        assert p.a != p.b and a["fabric"] == b["fabric"] == p.fabric
        assert a["rails"][p.rail]["leaf"] == p.leaf_a and b["rails"][p.rail]["leaf"] == p.leaf_b
        assert (p.kind == "leaf") == (p.leaf_a == p.leaf_b)


@pytest.mark.parametrize("spec", ["h100-roce-2su", "h100-ib-4su", "b200-ib-16su"])
def test_multi_su_leaves_get_at_least_as_many_upward_flows_as_uplinks(spec: str) -> None:
    plan = plan_of(spec)
    cov = P.coverage(plan, P.select_pairs(plan))
    assert cov.upward_flows and not cov.starved_leaves(), cov.starved_leaves()[:5]
    assert all(cov.upward_flows[leaf] >= cov.uplinks[leaf] > 0 for leaf in cov.upward_flows)
    assert not cov.notes


@pytest.mark.parametrize("spec", ["lab", "h100-ib-1su"])
def test_single_leaf_rails_say_uplinks_are_untested(spec: str) -> None:
    cov = P.coverage(plan_of(spec), P.select_pairs(plan_of(spec)))
    assert cov.complete and not cov.upward_flows
    assert any("uplinks are on no tested path" in n for n in cov.notes)


def test_nodes_on_big_leaves_meet_two_partners_per_rail() -> None:
    """Localisation needs a node's pairs on a rail to have different partners (ring on a leaf of >= 3)."""
    plan = plan_of("h100-ib-1su")
    partners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for p in P.select_pairs(plan):
        partners[(p.a, p.rail)].add(p.b)
        partners[(p.b, p.rail)].add(p.a)
    assert len(partners) == 32 * 8
    assert all(len(v) == 2 for v in partners.values())


def test_dropping_any_lab_pair_leaves_a_hole() -> None:
    """The coverage check can fail: each of the lab's 16 pairs is the only test of its leaf."""
    plan = plan_of("lab")
    chosen = P.select_pairs(plan)
    assert len(chosen) == 16
    for i in range(len(chosen)):
        cov = P.coverage(plan, chosen[:i] + chosen[i + 1 :])
        assert not cov.complete
        assert chosen[i].leaf_a in cov.uncovered_leaves
        assert len(cov.uncovered_cables) == 2


def test_limit_to_some_nodes() -> None:
    plan = plan_of("h100-roce-2su")
    some = [n["name"] for n in plan["nodes"]][::7]
    chosen = P.select_pairs(plan, some)
    assert {x for p in chosen for x in (p.a, p.b)} <= set(some)
    cov = P.coverage(plan, chosen, some)
    assert cov.complete and cov.node_cables_total == len(some) * 8


@pytest.mark.parametrize("spec", SPECS)
def test_schedule_never_uses_a_node_twice_on_a_rail_in_a_round(spec: str) -> None:
    plan = plan_of(spec)
    chosen = P.select_pairs(plan)
    rounds = P.schedule(chosen)
    assert sorted(p for r in rounds for p in r) == sorted(chosen)
    for r in rounds:
        ends = [(n, p.rail) for p in r for n in (p.a, p.b)]
        assert len(ends) == len(set(ends))
    assert len(rounds) <= 5  # rings and shifted rings colour with few rounds


@pytest.mark.parametrize("spec", SPECS)
def test_allreduce_groups(spec: str) -> None:
    plan = plan_of(spec)
    fabric = {n["name"]: n["fabric"] for n in plan["nodes"]}
    su = {n["name"]: n["su"] for n in plan["nodes"]}
    groups = P.allreduce_groups(plan, 8)
    assert {n for g in groups for n in g} == set(fabric)
    for g in groups:
        assert 2 <= len(g) <= 8 and len({fabric[n] for n in g}) == 1
    if len(set(su.values())) > 1:  # strided groups cross scalable units
        assert any(len({su[n] for n in g}) > 1 for g in groups)
    with pytest.raises(ValueError):
        P.allreduce_groups(plan, 1)


def test_lab_groups_and_pairs_are_what_the_lab_can_run() -> None:
    plan = plan_of("lab")
    assert P.allreduce_groups(plan, 8) == [["ib-01", "ib-02"], ["roce-01", "roce-02"]]
    assert {(p.a, p.b) for p in P.select_pairs(plan)} == {("roce-01", "roce-02"), ("ib-01", "ib-02")}
