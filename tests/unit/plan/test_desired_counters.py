"""The `link_counters` desired state: the counter policy merged with the spec's `certification.link_counters`
once per SKU (spec/counter_policy.py `compiled`, plan/desired_counters.py), in plan.json for every node and
in the inventory's clusterforge_desired, not a second copy anywhere."""

from __future__ import annotations

import pytest
import yaml

from clusterforge.plan.desired_counters import counters_desired, counters_input, fabric_type
from clusterforge.plan.inventory import all_vars
from clusterforge.plan.outputs import write_outputs
from clusterforge.spec.counter_policy import (
    Limit,
    compiled,
    counter_names,
    default_policy,
    from_desired,
    policy_limits,
    window_s,
)

IB, ROCE = "h100-sxm-8x400g-ib", "h100-sxm-8x400g-roce"
SITE = "spec certification.link_counters.limits"


def policy() -> dict:
    """The packaged policy with a SKU entry for `big` (its own window, one IB limit changed, one added)."""
    p = default_policy()
    p["skus"] = {
        "big": {
            "window_s": 8,
            "infiniband": {
                "link_downed": {"read": "counters", "max_per_s": 0.5, "source": "big's vendor note"},
                "port_xmit_wait": {"read": "counters", "max_per_s": None, "source": "big reports it"},
            },
        }
    }
    return p


def test_no_site_input_is_the_policy_as_it_is() -> None:
    out = compiled("roce", ROCE)
    assert out["window_s"] == window_s() == 5.0
    assert sorted(out["limits"]) == sorted(counter_names("roce"))
    assert "rx_prio{prio}_pause" in out["limits"]  # templates kept for the validator
    for name, lim in policy_limits("roce").items():
        assert out["limits"][name] == {"read": lim.read, "max_per_s": lim.max_per_s, "source": lim.source}
    assert out["limits"]["rx_prio{prio}_pause"]["max_per_s"] == 100000.0
    assert out["limits"]["np_cnp_sent"]["max_per_s"] is None


def test_merge_order_policy_then_policy_sku_then_site_then_spec_sku() -> None:
    site = {
        "window_s": 3.0,
        "limits": {"symbol_error": 2.0, "link_downed": 4.0, "port_rcv_errors": None, "out_of_sequence": 9.0},
        "skus": {"big": {"window_s": 20.0, "limits": {"symbol_error": 1.0}}},
    }
    p = policy()
    out = compiled("infiniband", "big", site, p)
    lim = out["limits"]
    assert out["window_s"] == 20.0  # the spec SKU's window, last
    assert lim["symbol_error"] == {
        "read": "counters",
        "max_per_s": 1.0,
        "source": "spec certification.link_counters.skus.big.limits",
    }
    assert lim["link_downed"] == {
        "read": "counters",
        "max_per_s": 4.0,
        "source": SITE,
    }  # site over policy SKU
    assert lim["port_rcv_errors"] == {"read": "counters", "max_per_s": None, "source": SITE}  # null: reported
    assert lim["port_xmit_wait"]["source"] == "big reports it"  # the policy SKU entry's own counter
    assert lim["port_xmit_discards"]["source"].startswith("project default")  # untouched: the policy's
    assert "out_of_sequence" not in lim  # a RoCE counter: not on an InfiniBand node
    # one layer less each time
    del site["skus"]
    out = compiled("infiniband", "big", site, p)
    assert out["window_s"] == 3.0 and out["limits"]["symbol_error"]["source"] == SITE
    out = compiled("infiniband", "big", {}, p)
    assert out["window_s"] == 8.0  # the policy SKU's window
    assert out["limits"]["link_downed"] == {
        "read": "counters",
        "max_per_s": 0.5,
        "source": "big's vendor note",
    }
    out = compiled("infiniband", "small", site, p)
    assert out["limits"]["link_downed"]["source"] == SITE and "port_xmit_wait" not in out["limits"]
    other = compiled("infiniband", "small", {"skus": {"big": {"limits": {"symbol_error": 7.0}}}}, p)
    assert other["limits"]["symbol_error"]["max_per_s"] == 0.0  # another SKU's limit is not this one's


def test_from_desired_fills_in_the_rails_priority() -> None:
    out = compiled("roce", ROCE, {"limits": {"rx_prio{prio}_pause": 10}})
    lim = from_desired(out, 5)
    assert lim["rx_prio5_pause"] == Limit(10.0, SITE, "ethtool")
    assert "rx_prio3_pause" not in lim and not any("{" in k for k in lim)
    assert lim["out_of_sequence"] == Limit(
        0.0, policy_limits("roce")["out_of_sequence"].source, "hw_counters"
    )
    with pytest.raises(KeyError):
        from_desired({"window_s": 5}, 3)


def lab_with(spec_text, edit, block: str) -> str:
    return edit(
        spec_text("lab"), "  join_tiers: [quick]\n", "  join_tiers: [quick]\n  link_counters:\n" + block
    )


def test_plan_json_carries_it_for_every_node(example) -> None:
    """Every node of every example plan: its SKU's compiled limits; the IB and RoCE sets differ."""
    for name in ("lab", "h100-roce-2su", "h100-ib-1su"):
        doc = example(name).doc
        site = counters_input(doc["certification"])
        for n in doc["nodes"]:
            d = n["desired"]["link_counters"]
            sku = doc["skus"][n["sku"]]
            assert fabric_type(sku) == n["fabric_type"]
            assert d == counters_desired(sku, site) == compiled(n["fabric_type"], n["sku"], site)
            assert sorted(d["limits"]) == sorted(counter_names(n["fabric_type"], n["sku"]))
            assert d["window_s"] > 0
    lab = example("lab").doc
    by_type = {n["fabric_type"]: n["desired"]["link_counters"]["limits"] for n in lab["nodes"]}
    assert "symbol_error" in by_type["infiniband"] and "symbol_error" not in by_type["roce"]


def test_spec_overrides_reach_plan_json_and_the_inventory(spec_text, plan_text, edit, tmp_path) -> None:
    text = lab_with(
        spec_text,
        edit,
        "    window_s: 2\n    limits: {symbol_error: 10, out_of_sequence: null}\n"
        f"    skus:\n      {IB}: {{window_s: 7, limits: {{symbol_error: 3}}}}\n",
    )
    plan = plan_text(text)
    nodes = {n["fabric_type"]: n for n in plan.doc["nodes"]}
    ib, roce = (nodes[t]["desired"]["link_counters"] for t in ("infiniband", "roce"))
    assert ib["window_s"] == 7.0 and roce["window_s"] == 2.0
    assert ib["limits"]["symbol_error"]["max_per_s"] == 3.0
    assert ib["limits"]["symbol_error"]["source"] == f"spec certification.link_counters.skus.{IB}.limits"
    assert roce["limits"]["out_of_sequence"] == {"read": "hw_counters", "max_per_s": None, "source": SITE}
    # the inventory: inside each SKU's clusterforge_desired, not a raw copy in clusterforge_certification
    assert "link_counters" not in all_vars(plan)["clusterforge_certification"]
    out = write_outputs(plan, tmp_path, svg=False)
    sku_vars = yaml.safe_load((out / "group_vars" / f"sku_{IB.replace('-', '_')}.yml").read_text())
    assert sku_vars["clusterforge_desired"]["link_counters"] == ib


def test_a_limit_change_moves_the_expectation_digest(spec_text, plan_text, edit) -> None:
    """The certificate binds to the limits it was judged by: a spec limit changes the SKU's nodes' digest
    and no other's."""
    base = plan_text(spec_text("lab"))
    changed = plan_text(
        lab_with(spec_text, edit, f"    skus:\n      {IB}: {{limits: {{symbol_error: 1}}}}\n")
    )
    a = {n["name"]: (n["sku"], n["expectation_digest"]) for n in base.doc["nodes"]}
    b = {n["name"]: n["expectation_digest"] for n in changed.doc["nodes"]}
    assert {k for k, (sku, d) in a.items() if b[k] != d} == {k for k, (sku, _) in a.items() if sku == IB}
