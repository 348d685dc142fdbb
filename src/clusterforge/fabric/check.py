"""`clusterforge fabric check`: the plan's compute fabrics against a recorded discovery."""

from __future__ import annotations

from pathlib import Path

from clusterforge.fabric.compare import compare
from clusterforge.fabric.discovery import Discovery, coverage, load, unchecked_error
from clusterforge.fabric.expected import expected_links, fabric_types
from clusterforge.fabric.model import FabricReport
from clusterforge.plan.build import Plan
from clusterforge.plan.cabling import CableSheet, cable_sheet


def check(plan: Plan, discovery: Path, sheet: CableSheet | None = None) -> FabricReport:
    return run(plan, discovery, sheet)[0]


def run(plan: Plan, discovery: Path, sheet: CableSheet | None = None) -> tuple[FabricReport, Discovery]:
    """The report and the discovery it was read from (its InfiniBand views' switch GUIDs, ...)."""
    sheet = sheet or cable_sheet(plan)
    expected = expected_links(plan, sheet)
    types = fabric_types(plan)
    known = {n["name"] for n in plan.nodes} | {s.name for s in sheet.switches}
    switches_of: dict[str, set[str]] = {f: set() for f in types}
    nodes_of: dict[str, list[str]] = {f: [] for f in types}
    for e in expected:
        if e.kind == "node-leaf":
            switches_of[e.fabric].add(e.b.device)
            if not nodes_of[e.fabric] or nodes_of[e.fabric][-1] != e.a.device:
                nodes_of[e.fabric].append(e.a.device)
        else:
            switches_of[e.fabric].update((e.a.device, e.b.device))
    d = load(discovery, known)
    cov = coverage(d, types, switches_of, nodes_of)
    report = compare(
        expected, d.links, cov, known, cluster=plan.name, plan_hash=plan.plan_hash, source=str(discovery)
    )
    if report.checked < report.expected and not cov.errors:
        report.errors.append(unchecked_error(report.expected - report.checked))
    return report, d
