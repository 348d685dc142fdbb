"""`fabric check` end to end: a plan, a recorded discovery rendered from its wiring with faults injected,
the report in every format, and the CLI's exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import InputError
from clusterforge.fabric.check import check
from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.formats import RENDERERS
from clusterforge.fabric.render import Wire, ibnetdiscover_text, lldp_json0
from clusterforge.plan.build import Plan
from clusterforge.plan.cabling import cable_sheet, node_rails
from tests.conftest import REPO, example_plan

IB_SPEC = REPO / "inventory/clusters/h100-ib-1su.yaml"
ROCE_SPEC = REPO / "inventory/clusters/h100-roce-2su.yaml"


@pytest.fixture(scope="module")
def ib_plan() -> Plan:
    return example_plan("h100-ib-1su")


@pytest.fixture(scope="module")
def roce_plan() -> Plan:
    return example_plan("h100-roce-2su")


def _ib_wires(plan: Plan) -> list[Wire]:
    return [Wire(e.a, e.b, e.kind == "node-leaf") for e in expected_links(plan)]


def test_expected_rails_are_the_sheet_node_rails(ib_plan: Plan) -> None:
    sheet = cable_sheet(ib_plan)
    links = expected_links(ib_plan, sheet)
    rails = node_rails(ib_plan, "gpu-0001", sheet)
    mine = [e for e in links if e.kind == "node-leaf" and e.a.device == "gpu-0001"]
    assert [e.cable_id for e in mine] == [r.cable_id for r in rails]
    assert [(e.a.port, e.b.device, e.b.port) for e in mine] == [
        (r.hca, r.switch, str(r.switch_port)) for r in rails
    ]
    assert {e.kind for e in links} >= {"node-leaf", "leaf-spine"}


def test_ib_discovery_as_planned_then_swapped(ib_plan: Plan, tmp_path: Path) -> None:
    wires = _ib_wires(ib_plan)
    (tmp_path / "ibnetdiscover.txt").write_text(ibnetdiscover_text(wires))
    ok = check(ib_plan, tmp_path)
    assert ok.findings == [] and ok.errors == [] and ok.ok == ok.checked == ok.expected

    w0, w1 = wires[0], wires[1]
    wires[0], wires[1] = w0._replace(b=w1.b), w1._replace(b=w0.b)
    (tmp_path / "ibnetdiscover.txt").write_text(ibnetdiscover_text(wires))
    r = check(ib_plan, tmp_path)
    (f,) = r.findings
    rails = node_rails(ib_plan, "gpu-0001")
    assert f.problem == "swapped" and f.cables == (rails[0].cable_id, rails[1].cable_id)
    for rc in rails[:2]:
        assert f"{rc.node_location.short} gpu-0001 {rc.node_port}" in f.message
        assert (
            f"{rc.switch_location.short} {rc.switch} port {rc.switch_port} ({rc.switch_port_name})"
            in f.message
        )
    assert f.fix.startswith(
        f"swap the cables at {rails[0].node_location.short} gpu-0001 {rails[0].node_port}"
    )


def test_roce_lldp_folder_with_a_swap_and_a_missing_node(roce_plan: Plan, tmp_path: Path) -> None:
    by: dict[str, list[tuple[str, str, str]]] = {}
    for e in expected_links(roce_plan):
        if e.kind == "node-leaf":
            by.setdefault(e.a.device, []).append((e.a.port, e.b.device, e.b.port))
    n = by["gpu-0002"]
    n[0], n[5] = (n[0][0], n[5][1], n[5][2]), (n[5][0], n[0][1], n[0][2])
    for node, nb in by.items():
        if node != "gpu-0064":
            (tmp_path / f"{node}.json").write_text(lldp_json0(nb))
    r = check(roce_plan, tmp_path)
    assert [f.problem for f in r.findings] == ["swapped"]
    assert (
        r.findings[0].fix == "swap the cables at r01U10 gpu-0002 enp24s0np0 and r01U10 gpu-0002 enp192s0np0"
    )
    assert "enp24s0np0 reaches nr01aU37 roce0-leaf-su0-r5 swp1s1" in r.findings[0].message
    assert len(r.errors) == 1 and "gpu-0064" in r.errors[0]
    assert r.deviated() and r.deviated(allow_unchecked=True)
    for fmt, render in RENDERERS.items():
        out = render(r, False)
        assert "gpu-0002" in out, fmt
    doc = json.loads(RENDERERS["json"](r, False))
    assert doc["counts"]["swapped"] == 1 and doc["deviated"] is True
    suite = ET.fromstring(RENDERERS["junit"](r, False))
    assert suite.get("failures") == "1" and suite.get("errors") == "1"


def test_bad_discovery_is_an_input_error(roce_plan: Plan, tmp_path: Path) -> None:
    (tmp_path / "not-a-node.json").write_text('{"lldp": {}}')
    with pytest.raises(InputError, match="not-a-node"):
        check(roce_plan, tmp_path)
    (tmp_path / "not-a-node.json").unlink()
    (tmp_path / "gpu-0001.json").write_text('{"lldp": [')
    with pytest.raises(InputError, match="complete lldp output"):
        check(roce_plan, tmp_path)
    (tmp_path / "gpu-0001.json").write_text("hello\n")
    with pytest.raises(InputError, match="unrecognised"):
        check(roce_plan, tmp_path)


def test_cli_exit_codes_and_formats(ib_plan: Plan, tmp_path: Path) -> None:
    runner = CliRunner()
    wires = _ib_wires(ib_plan)
    disc = tmp_path / "ibnetdiscover.txt"
    disc.write_text(ibnetdiscover_text(wires))
    res = runner.invoke(app, ["fabric", "check", str(IB_SPEC), "--discovery", str(disc)])
    assert res.exit_code == 0, res.output
    assert "result: as planned" in res.output
    disc.write_text(ibnetdiscover_text(wires[1:]))
    out = tmp_path / "report.xml"
    res = runner.invoke(
        app,
        [
            "fabric",
            "check",
            str(IB_SPEC),
            "--discovery",
            str(disc),
            "--format",
            "junit",
            "--output",
            str(out),
        ],
    )
    assert res.exit_code == 3
    assert ET.fromstring(out.read_text()).get("failures") == "1"
    res = runner.invoke(app, ["fabric", "check", str(IB_SPEC), "--discovery", str(tmp_path / "none")])
    assert res.exit_code == 2 or isinstance(res.exception, InputError)
