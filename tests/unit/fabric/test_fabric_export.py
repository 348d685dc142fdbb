"""Exports of the expected topology: ibdiagnet topology file and PTM topology.dot."""

from __future__ import annotations

import pytest

from clusterforge.errors import InputError
from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.export import ibdiagnet_topo, ptm_dot
from clusterforge.plan.cabling import cable_sheet
from tests.conftest import example_plan


def test_ibdiagnet_topo_lists_every_cable_from_both_systems() -> None:
    plan = example_plan("h100-ib-1su")
    sheet = cable_sheet(plan)
    links = expected_links(plan, sheet)
    text = ibdiagnet_topo(links, {s.name: s.model for s in sheet.switches})
    sections = [s for s in text.split("\n\n") if s.strip()]
    heads = [s.splitlines()[0] for s in sections]
    body = [ln for s in sections for ln in s.splitlines()[1:]]
    assert len(body) == 2 * len(links)
    assert all(" -> " in ln or "-4x-" in ln for ln in body)
    e = links[0]
    assert f"HCA_{e.a.port} {e.a.device}" in heads
    assert f"P1 -4x-100G-> QM9700 {e.b.device} P{e.b.port}" in text
    assert f"P{e.b.port} -4x-100G-> HCA_{e.a.port} {e.a.device} {e.a.port}/P1" in text


def test_ptm_dot_edges_and_roles() -> None:
    plan = example_plan("h100-roce-2su")
    sheet = cable_sheet(plan)
    links = expected_links(plan, sheet)
    dot = ptm_dot(links, {s.name: s.role for s in sheet.switches}, plan.name)
    assert dot.startswith('graph "h100-roce-2su" {') and dot.rstrip().endswith("}")
    assert dot.count(" -- ") == len(links)
    assert '"gpu-0001":"enp24s0np0" -- "roce0-leaf-su0-r0":"swp1s0";' in dot
    assert '"roce0-leaf-su0-r0" [role="leaf"];' in dot


def test_export_refuses_names_the_formats_cannot_carry() -> None:
    plan = example_plan("h100-roce-2su")
    links = expected_links(plan)
    bad = [links[0]._replace(a=links[0].a._replace(device='evil" -- "x'))]
    with pytest.raises(InputError):
        ptm_dot([bad[0]._replace(a_name='a"b')], {}, "c")
    with pytest.raises(InputError):
        ibdiagnet_topo([bad[0]._replace(width="4x")], {})
