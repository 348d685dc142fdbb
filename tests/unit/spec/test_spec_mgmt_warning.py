"""spec/checks_mgmt.py: management switch ports faster than a SKU's management NIC are a WARNING (the link
negotiates down to the NIC, the plan certifies that speed), never an error: the example specs load."""

from __future__ import annotations

import pytest

from clusterforge.spec import load_spec
from tests.conftest import CLUSTERS

from ._helpers import LAB, edit, line_of

EXAMPLES = sorted(p.stem for p in CLUSTERS.glob("*.yaml"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_spec_loads(name: str) -> None:
    spec = load_spec(CLUSTERS / f"{name}.yaml")
    fast = spec.cluster.fabrics.management.speed_gbps
    slow = {
        s.name: s.management_nic.speed_gbps for s in spec.skus.values() if s.management_nic.speed_gbps < fast
    }
    unverified = [p for p in spec.cluster.pools if spec.skus[p.sku].unverified]  # one per pool of such a SKU
    # one per SKU whose NIC is slower than the switch ports
    assert len(spec.warnings) == len(slow) + len(unverified)


def test_the_warning_names_both_speeds_the_path_and_the_fix() -> None:
    from clusterforge.spec import load_spec_text

    text = edit(LAB, "management: {speed_gbps: 10,", "management: {speed_gbps: 25,")
    spec = load_spec_text(text, "clusters/test.yaml")
    assert [w.path for w in spec.warnings] == ["fabrics.management.speed_gbps"] * 2  # the lab's two SKUs
    w = spec.warnings[0]
    assert w.line == line_of(text, "management: {speed_gbps: 25,")
    assert w.found == "25 Gb/s switch ports"
    assert "at most the 10 Gb/s of SKU" in w.expected and "negotiate down to 10 Gb/s" in w.expected
    assert w.fix.startswith("set fabrics.management.speed_gbps: 10")


def test_switch_ports_at_the_nic_speed_warn_nothing() -> None:
    from clusterforge.spec import load_spec_text

    assert load_spec_text(LAB, "t.yaml").warnings == ()  # 10 Gb/s ports, 10 Gb/s NICs


def test_clusterforge_plan_prints_it_and_succeeds(tmp_path) -> None:
    from typer.testing import CliRunner

    from clusterforge.cli import app

    spec = tmp_path / "fast.yaml"
    spec.write_text(edit(LAB, "management: {speed_gbps: 10,", "management: {speed_gbps: 25,"))
    res = CliRunner().invoke(
        app, ["plan", str(spec), "--out", str(tmp_path / "out"), "--no-svg", "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.count("warning: ") == 2 and "fabrics.management.speed_gbps" in res.stderr
    assert "warning" not in res.stdout
