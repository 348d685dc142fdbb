"""Expectation digests move only with what a node is checked against; the plan hash moves with anything."""

from __future__ import annotations

import hashlib
import json

from clusterforge.plan.digest import canonical_json

OVERRIDE = "  join_tiers: [quick]\n  thresholds:\n    {sku}: {{allreduce_busbw_gbs: {value}}}\n"


def _digests(plan) -> dict[str, str]:
    return {n["name"]: n["expectation_digest"] for n in plan.doc["nodes"]}


def _with_override(text: str, edit, sku: str, value: int) -> str:
    return edit(text, "  join_tiers: [quick]\n", OVERRIDE.format(sku=sku, value=value))


def test_plan_hash_is_the_hash_of_the_plan_without_it(example) -> None:
    doc = dict(example("lab").doc)
    h = doc.pop("plan_hash")
    assert h == hashlib.sha256(canonical_json(doc).encode()).hexdigest()


def test_threshold_override_of_the_ib_sku_leaves_roce_digests(spec_text, plan_text, edit) -> None:
    base = plan_text(spec_text("lab"))
    changed = plan_text(_with_override(spec_text("lab"), edit, "h100-sxm-8x400g-ib", 400))
    a, b = _digests(base), _digests(changed)
    assert [a[n] == b[n] for n in ("roce-01", "roce-02", "ib-01", "ib-02")] == [True, True, False, False]
    assert base.plan_hash != changed.plan_hash


def test_growing_another_pool_leaves_roce_digests(spec_text, plan_text, edit) -> None:
    text = edit(spec_text("lab"), '    count: 2\n    naming: "ib-', '    count: 3\n    naming: "ib-')
    text = edit(text, "    count: 1\n", "    count: 2\n")  # a second rack for the fifth node
    base, grown = plan_text(spec_text("lab")), plan_text(text)
    a, b = _digests(base), _digests(grown)
    assert a["roce-01"] == b["roce-01"] and a["roce-02"] == b["roce-02"]
    assert a["ib-01"] == b["ib-01"] and a["ib-02"] == b["ib-02"]  # their own addresses did not move either
    assert "ib-03" in b
    assert base.plan_hash != grown.plan_hash


def test_cosmetic_change_moves_only_the_plan_hash(spec_text, plan_text, edit) -> None:
    text = edit(spec_text("lab"), "simulated hardware\n", "simulated hardware (v2)\n")
    base, changed = plan_text(spec_text("lab")), plan_text(text)
    assert _digests(base) == _digests(changed)
    assert base.plan_hash != changed.plan_hash


def test_changes_to_what_a_node_is_checked_against_move_its_digest(spec_text, plan_text, edit) -> None:
    lab = spec_text("lab")
    base = _digests(plan_text(lab))
    cases = {  # change -> nodes whose digest must move
        "roce sku threshold": (
            _with_override(lab, edit, "h100-sxm-8x400g-roce", 300),
            {"roce-01", "roce-02"},
        ),
        "tuning": (edit(lab, "  cstate_max: 1\n", "  cstate_max: 2\n"), set(base)),
        "roce qos": (edit(lab, "dscp: 26,", "dscp: 24,"), set(base)),
        "software pin": (edit(lab, '  nccl: "2.26.2"', '  nccl: "2.27.3"'), set(base)),
        "driver": (
            edit(lab, '{branch: "570", version: "570.133.20"}', '{branch: "570", version: "570.148.08"}'),
            set(base),
        ),
        "roce rail subnet": (edit(lab, "10.245.3.0/24", "10.245.33.0/24"), {"roce-01", "roce-02"}),
        "ib-02 address": (
            edit(
                lab,
                "    fabric: ib0\n",
                "    fabric: ib0\n    nodes:\n      - name: ib-02\n        management_ip: 10.244.0.99\n",
            ),
            {"ib-02"},
        ),
    }
    for label, (text, moved) in cases.items():
        after = _digests(plan_text(text))
        assert {n for n in base if base[n] != after[n]} == moved, label


def test_digest_ignores_rack_placement(spec_text, plan_text, edit) -> None:
    # fewer nodes per rack moves ib-01 to the second rack; that is not something a node is checked against
    text = edit(spec_text("lab"), "nodes_per_rack: 4", "nodes_per_rack: 2")
    text = edit(text, "    count: 1\n", "    count: 2\n")
    base, changed = plan_text(spec_text("lab")), plan_text(text)
    assert changed.node("ib-01")["rack"] == "r02" != base.node("ib-01")["rack"]
    assert _digests(base) == _digests(changed)


def test_digests_are_sha256_and_distinct(example) -> None:
    d = _digests(example("h100-ib-1su"))
    assert len(set(d.values())) == 32
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in d.values())
    assert json.loads(json.dumps(d)) == d
