"""`fabric check` report renderers: text (CI logs), JSON, JUnit XML, Markdown - like `drift`'s."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from clusterforge.fabric.model import FabricReport
from clusterforge.term import md_cell

LABEL = {
    "swapped": "SWAP", "wrong_port": "PORT", "wrong_device": "WIRED", "missing": "MISSING",
    "degraded": "DEGRADED", "extra": "EXTRA", "unexpected_device": "DEVICE",
}  # fmt: skip


def _head(r: FabricReport) -> str:
    return (
        f"fabric check of {r.cluster} (plan {r.plan_hash[:12]}) against {r.source}: {r.checked} of "
        f"{r.expected} planned link(s) checked, {r.ok} ok, {len(r.findings)} finding(s)"
    )


def text(r: FabricReport, allow_unchecked: bool = False) -> str:
    lines = [_head(r)]
    for f in r.findings:
        lines.append(f"  {LABEL[f.problem]:<8} {f.message}")
        lines.append(f"           fix: {f.fix}")
    for e in r.errors:
        lines.append(f"  ERROR    {e}")
    lines.append("result: " + ("NOT AS PLANNED" if r.deviated(allow_unchecked) else "as planned"))
    return "\n".join(lines) + "\n"


def as_json(r: FabricReport, allow_unchecked: bool = False) -> str:
    doc = r.to_dict() | {"deviated": r.deviated(allow_unchecked)}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def junit(r: FabricReport, allow_unchecked: bool = False) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"fabric-{r.cluster}",
        tests=str(r.ok + len(r.findings) + len(r.errors)),
        failures=str(len(r.findings)),
        errors=str(len(r.errors)),
    )
    ET.SubElement(suite, "testcase", classname=f"fabric.{r.cluster}", name=f"{r.ok} planned links as planned")
    for f in r.findings:
        name = ",".join(f.cables) or ",".join(f.devices)
        case = ET.SubElement(suite, "testcase", classname=f"fabric.{r.cluster}.{f.problem}", name=name)
        fail = ET.SubElement(case, "failure", message=f.message)
        fail.text = f"fix: {f.fix}"
    for e in r.errors:
        case = ET.SubElement(suite, "testcase", classname=f"fabric.{r.cluster}", name="coverage")
        ET.SubElement(case, "error", message=e)
    return ET.tostring(suite, encoding="unicode") + "\n"


def markdown(r: FabricReport, allow_unchecked: bool = False) -> str:
    head = "❌ fabric not as planned" if r.deviated(allow_unchecked) else "✅ fabric as planned"
    out = [f"### {head} — `{r.cluster}` (plan `{r.plan_hash[:12]}`)", "", md_cell(_head(r)), ""]
    if r.findings:
        out += ["| problem | cables | finding | fix |", "|---|---|---|---|"]
        out += [
            f"| {f.problem} | {md_cell(', '.join(f.cables))} | {md_cell(f.message)} | {md_cell(f.fix)} |"
            for f in r.findings
        ]
    if r.errors:
        out += ["", "**Not checked:**"] + [f"- {md_cell(e)}" for e in r.errors]
    return "\n".join(out) + "\n"


RENDERERS = {"text": text, "json": as_json, "junit": junit, "markdown": markdown}
