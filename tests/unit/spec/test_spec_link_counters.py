"""`certification.link_counters`: the spec's link-counter limits and window over the counter policy.
Good input loads; each bad case is one problem at its YAML path and line, with expected, found and fix;
`clusterforge plan` exits 2 on them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clusterforge.spec import load_spec_text
from clusterforge.spec.counter_policy import counter_names
from tests.conftest import REPO

from ._helpers import FILE, LAB, edit, line_of, only

CERT = "  join_tiers: [quick]\n"
IB, ROCE = "h100-sxm-8x400g-ib", "h100-sxm-8x400g-roce"


def with_counters(block: str) -> str:
    """The lab spec with ``block`` (YAML lines under `link_counters:`) in its certification section."""
    return edit(LAB, CERT, CERT + "  link_counters:\n" + block)


def test_good_section_loads_and_defaults_are_the_policys() -> None:
    text = with_counters(
        "    window_s: 2.5\n"
        "    limits:\n"
        "      symbol_error: 10\n"
        '      "rx_prio{prio}_pause": 5000\n'
        "      np_cnp_sent: null\n"
        "    skus:\n"
        f"      {IB}: {{window_s: 300, limits: {{symbol_error: 0.5}}}}\n"
        f"      {ROCE}: {{limits: {{out_of_sequence: 1}}}}\n"
    )
    lc = load_spec_text(text, FILE).cluster.certification.link_counters
    assert lc.window_s == 2.5 and lc.limits == {
        "symbol_error": 10,
        "rx_prio{prio}_pause": 5000,
        "np_cnp_sent": None,
    }
    assert lc.skus[IB].window_s == 300 and lc.skus[IB].limits == {"symbol_error": 0.5}
    assert lc.skus[ROCE].window_s is None
    default = load_spec_text(LAB, FILE).cluster.certification.link_counters
    assert (default.window_s, default.limits, default.skus) == (None, {}, {})  # the policy's, untouched


def test_unknown_counter_site_wide_names_the_policys_counters() -> None:
    text = with_counters("    limits: {symbl_error: 1}\n")
    p = only(text)
    assert (p.path, p.line) == (
        "certification.link_counters.limits.symbl_error",
        line_of(text, "symbl_error"),
    )
    assert p.expected.startswith("a link counter of this spec's fabrics (infiniband, roce): symbol_error, ")
    assert all(n in p.expected for n in [*counter_names("infiniband"), *counter_names("roce")])
    assert p.found == "unknown counter 'symbl_error'"
    assert p.fix == "did you mean 'symbol_error'?"


def test_per_priority_counter_with_a_digit_is_told_to_write_prio() -> None:
    text = with_counters("    limits: {rx_prio3_pause: 1}\n")
    p = only(text)
    assert p.path == "certification.link_counters.limits.rx_prio3_pause"
    assert p.found == "unknown counter 'rx_prio3_pause'"
    assert p.fix.startswith("write the priority as {prio}: 'rx_prio{prio}_pause'")


def test_counter_of_a_fabric_type_the_spec_does_not_have() -> None:
    """The IB-only example: a RoCE counter site-wide would judge nothing."""
    spec = (REPO / "inventory" / "clusters" / "h100-ib-1su.yaml").read_text(encoding="utf-8")
    assert "certification:" in spec and "link_counters" not in spec
    text = spec.replace(
        "certification:\n", "certification:\n  link_counters:\n    limits: {out_of_sequence: 1}\n"
    )
    p = only(text)
    assert p.path == "certification.link_counters.limits.out_of_sequence"
    assert p.expected.startswith("a link counter of this spec's fabrics (infiniband): symbol_error")
    assert p.fix == "'out_of_sequence' is a counter of roce rails and this spec has no roce fabric: remove it"


def test_sku_limit_must_be_a_counter_of_that_skus_fabric_type() -> None:
    text = with_counters(f"    skus:\n      {IB}:\n        limits: {{out_of_sequence: 1}}\n")
    p = only(text)
    assert (p.path, p.line) == (
        f"certification.link_counters.skus.{IB}.limits.out_of_sequence",
        line_of(text, "out_of_sequence: 1"),
    )
    assert p.expected == f"a link counter of SKU {IB} (on infiniband): " + ", ".join(
        counter_names("infiniband")
    )
    assert p.found == "unknown counter 'out_of_sequence'"
    assert p.fix == "'out_of_sequence' is a counter of roce rails: set it for a SKU on roce, or site-wide"


def test_unknown_sku() -> None:
    text = with_counters("    skus:\n      h100-sxm-8x400g:\n        window_s: 10\n")
    p = only(text)
    assert (p.path, p.line) == (
        "certification.link_counters.skus.h100-sxm-8x400g",
        line_of(text, "h100-sxm-8x400g:"),
    )
    assert p.expected == f"a SKU of this spec ({ROCE}, {IB})"
    assert p.found == "unknown SKU 'h100-sxm-8x400g'"
    assert p.fix == "use a SKU name listed under skus"


@pytest.mark.parametrize(
    ("block", "path", "expected"),
    [
        ("    window_s: 0.1\n", "certification.link_counters.window_s", "greater than or equal to 0.5"),
        ("    window_s: 301\n", "certification.link_counters.window_s", "less than or equal to 300"),
        ("    window_s: true\n", "certification.link_counters.window_s", "a valid number"),
        ("    limits: {symbol_error: -1}\n", "certification.link_counters.limits.symbol_error", ">= 0"),
        (
            '    limits: {symbol_error: "1"}\n',
            "certification.link_counters.limits.symbol_error",
            "a valid number",
        ),
        ('    limits: {"bad-name": 1}\n', "certification.link_counters.limits.bad-name", "a counter name"),
        ('    limits: {"rx_{0}": 1}\n', "certification.link_counters.limits.rx_{0}", "a counter name"),
        (
            f"    skus:\n      {IB}: {{window_s: 0}}\n",
            f"certification.link_counters.skus.{IB}.window_s",
            "0.5",
        ),
        (
            f"    skus:\n      {IB}: {{limit: {{}}}}\n",
            f"certification.link_counters.skus.{IB}.limit",
            "known keys",
        ),
        ("    window: 5\n", "certification.link_counters.window", "known keys"),
    ],
)
def test_bad_values_name_their_path(block: str, path: str, expected: str) -> None:
    p = only(with_counters(block))
    assert p.path == path
    assert expected.replace(">= 0", "greater than or equal to 0") in p.expected
    assert p.fix


def test_plan_exits_2_naming_the_field(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(with_counters(f"    skus:\n      {IB}:\n        limits: {{symbol_eror: 1}}\n"))
    main = "import sys; from clusterforge.cli import main; sys.argv = ['clusterforge', *sys.argv[1:]]; main()"
    r = subprocess.run(
        [sys.executable, "-c", main, "plan", str(bad), "--no-svg"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"certification.link_counters.skus.{IB}.limits.symbol_eror" in r.stderr
    assert "did you mean 'symbol_error'?" in r.stderr
    assert not (tmp_path / "inventory").exists()
