"""Drift report renderers: text (CI logs), JSON, JUnit XML (test dashboards), Markdown (job summaries)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from clusterforge.drift.model import DriftReport
from clusterforge.term import md_cell


def text(r: DriftReport, allow_unreachable: bool = False) -> str:
    by = r.by_node()
    n_drift = sum(1 for items in by.values() if items)
    lines = [
        f"drift report for {r.cluster} (plan {r.plan_hash[:12]}): {len(r.items)} item(s) on "
        f"{n_drift} of {len(r.nodes)} node(s)"
    ]
    for node in sorted(by):
        items = by[node]
        if not items:
            lines.append(f"  OK     {node}")
            continue
        lines.append(f"  DRIFT  {node}: {len(items)} item(s)")
        for i in items:
            lines.append(f"         - {i.setting}: expected {i.expected}; actual {i.actual}  [{i.source}]")
            if i.fix:
                lines.append(f"           fix: {i.fix}")
    for e in r.errors:
        lines.append(f"  ERROR  {e}")
    if r.deep:
        fast = len(r.nodes) - len(r.deep)
        lines.append(f"  read: {fast} node(s) against their applied state, {len(r.deep)} by the deep check")
        for node, why in sorted(r.deep.items()):
            lines.append(f"         - {node}: {why}")
    verdict = "DRIFT" if r.drifted(allow_unreachable) else "no drift"
    lines.append(f"result: {verdict}")
    return "\n".join(lines) + "\n"


def as_json(r: DriftReport) -> str:
    return json.dumps(r.to_dict(), indent=2, sort_keys=True) + "\n"


def junit(r: DriftReport) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"drift-{r.cluster}",
        tests=str(len(r.nodes) + len(r.errors)),  # every testcase: one per node, one per tool error
        failures=str(sum(1 for v in r.by_node().values() if v)),
        errors=str(len(r.errors)),
    )
    for node, items in sorted(r.by_node().items()):
        case = ET.SubElement(suite, "testcase", classname=f"drift.{r.cluster}", name=node)
        if items:
            f = ET.SubElement(case, "failure", message=f"{len(items)} drift item(s)")
            f.text = "\n".join(
                f"{i.setting}: expected {i.expected}; actual {i.actual} [{i.source}]" for i in items
            )
    for e in r.errors:
        case = ET.SubElement(suite, "testcase", classname=f"drift.{r.cluster}", name="tool")
        ET.SubElement(case, "error", message=e)
    return ET.tostring(suite, encoding="unicode") + "\n"


def markdown(r: DriftReport, allow_unreachable: bool = False) -> str:
    by = r.by_node()
    head = "❌ drift found" if r.drifted(allow_unreachable) else "✅ no drift"
    out = [
        f"### {head} — `{r.cluster}` (plan `{r.plan_hash[:12]}`)",
        "",
        f"{len(r.items)} item(s) on {sum(1 for v in by.values() if v)} of {len(r.nodes)} node(s)",
        "",
    ]
    if r.items:
        out += ["| node | setting | expected | actual | source |", "|---|---|---|---|---|"]
        for i in sorted(r.items, key=lambda x: (x.node, x.setting)):
            out.append(
                "| "
                + " | ".join(md_cell(v) for v in (i.node, i.setting, i.expected, i.actual, i.source))
                + " |"
            )
    if r.errors:
        out += ["", "**Could not check:**"] + [f"- {md_cell(e)}" for e in r.errors]
    return "\n".join(out) + "\n"


RENDERERS = {"text": text, "markdown": markdown}
