"""`fabric check` report renderers: text (CI logs), JSON, JUnit XML, Markdown - like `drift`'s."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from clusterforge.errors import printable
from clusterforge.fabric.model import FabricReport, StateCheck
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


#: how a subject of the switch-state section is named
WHAT = {"switch": "switch", "sm": "SM of"}
SHOWN = 10  # unrecorded subjects named in text before "... and N more"


def _state_head(r: FabricReport) -> str:
    st = r.switch_state
    ok = sum(s.status == "ok" for s in st)
    return (
        f"switch state: {len(st)} switch(es)/SM(s) of the plan, {ok} as planned, {len(r.state_deviated())} "
        f"with deviations, {len(r.state_unchecked())} not checked (nothing recorded)"
    )


def _title(s: StateCheck) -> str:
    return printable(f"{WHAT[s.kind]} {s.subject}" + (f" ({s.os}, {s.source})" if s.recorded else ""))


def _unrecorded(r: FabricReport) -> list[str]:
    """One line per kind: the subjects nothing was recorded for (first SHOWN named)."""
    out = []
    for kind, where, what in (
        ("switch", "switch-state/<switch>/", "planned RoCE switch(es)"),
        ("sm", "sm/", "InfiniBand fabric(s)' SM"),
    ):
        names = [s.subject for s in r.state_unchecked() if s.kind == kind]
        if names:
            more = f" ... and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
            shown = ", ".join(names[:SHOWN]) + more
            out.append(
                printable(f"no recorded state in {where} for {len(names)} {what}: {shown} - not checked")
            )
    return out


def _state_text(r: FabricReport) -> list[str]:
    if not r.switch_state:
        return []
    lines = [_state_head(r)]
    for s in r.switch_state:
        if not s.recorded:
            continue
        lines.append(
            f"  {_title(s)}: " + (f"{len(s.deviations)} deviation(s)" if s.deviations else "as planned")
        )
        for d in s.deviations:
            lines.append(printable(f"  STATE    {d.item}: expected {d.expected}; found {d.found}"))
            lines += [printable(f"           fix: {d.fix}")] if d.fix else []
        lines.append(printable(f"           checked: {', '.join(s.checked) or 'nothing'}"))
        lines += [printable(f"           not checked: {', '.join(s.not_checked)}")] if s.not_checked else []
    lines += [f"  UNCHECKED {u}" for u in _unrecorded(r)]
    return lines


def text(r: FabricReport, allow_unchecked: bool = False) -> str:
    lines = [_head(r)]
    for f in r.findings:
        lines.append(f"  {LABEL[f.problem]:<8} {f.message}")
        lines.append(f"           fix: {f.fix}")
    for e in r.errors:
        lines.append(f"  ERROR    {e}")
    lines += _state_text(r)
    lines.append("result: " + ("NOT AS PLANNED" if r.deviated(allow_unchecked) else "as planned"))
    return "\n".join(lines) + "\n"


def as_json(r: FabricReport, allow_unchecked: bool = False) -> str:
    doc = r.to_dict() | {"deviated": r.deviated(allow_unchecked)}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def junit(r: FabricReport, allow_unchecked: bool = False) -> str:
    st = r.switch_state
    state_cases = sum(len(s.deviations) or 1 for s in st)
    state_failures = sum(len(s.deviations) for s in st)
    suite = ET.Element(
        "testsuite",
        name=f"fabric-{r.cluster}",
        tests=str(r.ok + len(r.findings) + len(r.errors) + state_cases),
        failures=str(len(r.findings) + state_failures),
        errors=str(len(r.errors) + len(r.state_unchecked())),
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
    for s in st:  # one testcase per read-back item that deviates, one for a read-back as planned
        cls = printable(f"fabric.{r.cluster}.{s.kind}_state.{s.subject}")
        if not s.recorded:
            case = ET.SubElement(suite, "testcase", classname=cls, name="recorded state")
            ET.SubElement(case, "error", message=f"{_title(s)}: nothing recorded - not checked")
        elif not s.deviations:
            case = ET.SubElement(suite, "testcase", classname=cls, name="as planned")
            out = ET.SubElement(case, "system-out")
            out.text = printable(f"checked: {', '.join(s.checked)}; not checked: {', '.join(s.not_checked)}")
        for d in s.deviations:
            case = ET.SubElement(suite, "testcase", classname=cls, name=printable(d.item))
            fail = ET.SubElement(
                case, "failure", message=printable(f"expected {d.expected}; found {d.found}")
            )
            fail.text = printable(f"{_title(s)}: fix: {d.fix or 'restore the rendered value'}")
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
    if r.switch_state:
        out += ["", f"**{_state_head(r)}**", ""]
        out += ["| switch / SM | status | item | expected | found | fix |", "|---|---|---|---|---|---|"]
        for s in r.switch_state:
            if not s.recorded:
                continue
            rows = [["deviates", d.item, d.expected, d.found, d.fix] for d in s.deviations]
            if not rows:
                unread = f"; not checked: {', '.join(s.not_checked)}" if s.not_checked else ""
                rows = [["ok", f"checked: {', '.join(s.checked)}{unread}", "", "", ""]]
            out += [
                "| " + " | ".join(md_cell(printable(c)) for c in [_title(s), *row]) + " |" for row in rows
            ]
        unrecorded = _unrecorded(r)
        out += [""] + [f"- not checked: {md_cell(u)}" for u in unrecorded] if unrecorded else []
    return "\n".join(out) + "\n"


RENDERERS = {"text": text, "json": as_json, "junit": junit, "markdown": markdown}
