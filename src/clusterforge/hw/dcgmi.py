"""``dcgmi diag -r N`` output: the ASCII table (DCGM 3.x and 4.x layouts) and the ``-j`` JSON form."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._common import is_elision, require_text, split_lines
from .errors import ParseError

TOOL = "dcgmi diag"
STATUSES = ("Pass", "Fail", "Warn", "Skip", "Not Run")
_SEVERITY = {"Fail": 3, "Warn": 2, "Pass": 1, "Skip": 0, "Not Run": 0}

_BORDER_RE = re.compile(r"^\+-+\+-+\+$")
_HEADER_SEP_RE = re.compile(r"^\+=+\+=+\+$")
_CATEGORY_RE = re.compile(r"^[|+]-+\s+(?P<name>[A-Za-z][A-Za-z ]*?)\s+-+\+-+[|+]$")
_ROW_RE = re.compile(r"^\|(?P<name>[^|]*)\|(?P<value>.*?)(?P<close>\|)?$")
_STATUS_RE = re.compile(r"^(?P<status>Pass|Fail|Warn|Skip|Not Run)(?: - (?P<detail>.+))?$")
_PER_GPU_RE = re.compile(r"^GPU(?P<gpu>\d+): (?P<status>Pass|Fail|Warn|Skip|Not Run)$")
_GPUS_RE = re.compile(r"^GPUs?: (?P<ids>\d+(?:, \d+)*)$")
_WRAP = 45  # dcgmi wraps long text at 45 characters, mid-word
_RETURN_RE = re.compile(r"Return: \((?P<code>-\d+)\)")


@dataclass(frozen=True)
class DiagTest:
    name: str
    category: str
    result: str  # Pass / Fail / Warn / Skip / Not Run (worst of the per-GPU results when several)
    per_gpu: Mapping[int, str]  # GPU index -> status, where the output gives per-GPU results
    warnings: tuple[str, ...]  # re-joined warning/error texts
    info: tuple[str, ...]
    detail: str | None = None  # table: text after "Pass - " ("All", "GPUs: 1, 2"); absent in JSON


@dataclass(frozen=True)
class DcgmDiag:
    format: str  # "table" or "json"
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    tests: tuple[DiagTest, ...]
    verdict: str  # "Error" if dcgmi aborted; "Fail" if a test or category failed; else "Warn"; else "Pass"
    complete: bool  # table closed by its bottom border (always True for JSON; False when aborted)
    errors: tuple[str, ...] = ()  # abort lines, or "<category>: <text>" of Error rows heading a category
    return_code: int | None = None  # dcgmReturn_t of an aborted run ("Return: (-21)")

    @property
    def aborted(self) -> bool:
        """dcgmi stopped before printing any result (only ``Error:`` lines)."""
        return self.format == "error"

    def failures(self) -> dict[str, str]:
        """What the diag reported as failed: each failed test (its warnings) and each category-level
        Error row, keyed by test name or ``<category> (Error)``."""
        out = {t.name: f"Fail {'; '.join(t.warnings)}".strip() for t in self.tests if t.result == "Fail"}
        if not self.aborted:
            for err in self.errors:
                cat, _, text = err.partition(": ")
                out[f"{cat} (Error)"] = text
        return out

    def test(self, name: str) -> DiagTest:
        for t in self.tests:
            if t.name.lower() == name.lower():
                return t
        raise KeyError(name)

    @property
    def failed_tests(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tests if t.result == "Fail")


def _worst(statuses: list[str]) -> str:
    return max(statuses, key=lambda s: _SEVERITY[s]) if statuses else "Skip"


def _verdict(tests: list[DiagTest], category_errors: int = 0) -> str:
    results = {t.result for t in tests}
    return "Fail" if "Fail" in results or category_errors else "Warn" if "Warn" in results else "Pass"


def _parse_abort(text: str) -> DcgmDiag | None:
    """dcgmi's abort: no table, ``Error: ...`` lines (one carrying ``Return: (-N)``), e.g. DCGM 3.x
    ``Error: Unable to complete diagnostic for group 2. Return: (-21) Host engine connection
    invalid/disconnected.`` (DCGM 4.x adds `` : `` before the text and may print the system errors on
    the following lines). None when the text is not that."""
    lines = [ln.strip() for ln in split_lines(text) if ln.strip()]
    if not lines or not lines[0].startswith("Error:"):
        return None
    code = next((int(m.group("code")) for ln in lines if (m := _RETURN_RE.search(ln))), None)
    if code is None:
        return None
    return DcgmDiag("error", None, None, (), (), "Error", False, tuple(lines), code)


class _TestBuilder:
    def __init__(self, name: str, category: str, value: str, line_no: int) -> None:
        m = _STATUS_RE.match(value)
        if not m:
            raise ParseError(
                TOOL, f"test {name!r} has no Pass/Fail/Warn/Skip result: {value!r}", line_no=line_no
            )
        self.name, self.category = name, category
        self.statuses: list[tuple[str, str | None]] = [(m.group("status"), m.group("detail"))]
        self.per_gpu: dict[int, str] = {}
        self.texts: list[tuple[str, list[str]]] = []  # ("Warning"|"Info", raw 45-char chunks)
        self.state = "status"

    def add_status(self, status: str, detail: str | None) -> None:
        self.statuses.append((status, detail))
        if detail and (g := _GPUS_RE.match(detail)):
            for gpu in g.group("ids").split(", "):
                self.per_gpu[int(gpu)] = status

    def build(self) -> DiagTest:
        first_status, first_detail = self.statuses[0]
        if first_detail and (g := _GPUS_RE.match(first_detail)):
            for gpu in g.group("ids").split(", "):
                self.per_gpu.setdefault(int(gpu), first_status)
        result = _worst([s for s, _ in self.statuses] + list(self.per_gpu.values()))
        texts: dict[str, list[str]] = {"Warning": [], "Info": []}
        for kind, chunks in self.texts:
            texts[kind].append("".join(chunks).strip())
        detail = (
            "; ".join(f"{s} - {d}" if d else s for s, d in self.statuses)
            if len(self.statuses) > 1
            else first_detail
        )
        return DiagTest(
            self.name,
            self.category,
            result,
            dict(self.per_gpu),
            tuple(texts["Warning"]),
            tuple(texts["Info"]),
            detail,
        )


def _parse_table(text: str, partial: bool) -> DcgmDiag:
    lines = split_lines(text)
    header_at = next(
        (i for i, line in enumerate(lines) if re.match(r"^\| Diagnostic\s+\| Result\s+\|$", line)), None
    )
    if header_at is None and not partial:
        raise ParseError(TOOL, "no '| Diagnostic | Result |' table header - not dcgmi diag output")
    start = 0
    if header_at is not None:
        if header_at + 1 >= len(lines) or not _HEADER_SEP_RE.match(lines[header_at + 1]):
            raise ParseError(TOOL, "table header not followed by '+===+' separator", line_no=header_at + 1)
        start = header_at + 2
    metadata: dict[str, str] = {}
    category = ""
    tests: list[_TestBuilder] = []
    cat_errors: list[tuple[str, list[str]]] = []  # Error rows heading a category (DCGM 2.x/3.x)
    in_category = 0  # tests seen in the current category
    text_owner = "test"  # who continuation rows of wrapped text belong to: "test" | "category"
    complete = False
    meta_key: str | None = None
    for idx in range(start, len(lines)):
        line, line_no = lines[idx].rstrip("\n"), idx + 1
        if not line.strip():
            continue
        if complete:
            raise ParseError(TOOL, "text after the table's closing border", line_no=line_no, line=line)
        if partial and is_elision(line):
            continue
        if _BORDER_RE.match(line):
            complete = True
            continue
        if cm := _CATEGORY_RE.match(line):
            category, in_category = cm.group("name"), 0
            continue
        rm = _ROW_RE.match(line)
        if not rm or (rm.group("close") is None and not partial) or len(rm.group("name")) != 27:
            raise ParseError(TOOL, "unrecognised table line", line_no=line_no, line=line)
        name = rm.group("name").strip()
        chunk = rm.group("value")[1 : 1 + _WRAP]  # wrapped text: 45 significant characters per row
        value = rm.group("value").strip()
        if category == "Metadata":
            if name:
                meta_key = name
                metadata[name] = value
            elif meta_key:
                metadata[meta_key] += " " + value
            continue
        if name == "Error" and category and not in_category:
            cat_errors.append((category, [chunk]))
            text_owner = "category"
        elif name in ("Warning", "Info", "Error"):
            if not tests:
                raise ParseError(TOOL, f"{name} row before any test", line_no=line_no, line=line)
            tests[-1].texts.append(("Info" if name == "Info" else "Warning", [chunk]))
            tests[-1].state, text_owner = "text", "test"
        elif name:
            if not category and not partial:
                raise ParseError(TOOL, "test row outside a category", line_no=line_no, line=line)
            tests.append(_TestBuilder(name, category, value, line_no))
            in_category, text_owner = in_category + 1, "test"
        elif text_owner == "category":
            cat_errors[-1][1].append(chunk)
        else:
            if not tests:
                raise ParseError(TOOL, "continuation row before any test", line_no=line_no, line=line)
            t = tests[-1]
            if pg := _PER_GPU_RE.match(value):
                t.per_gpu[int(pg.group("gpu"))] = pg.group("status")
                t.state = "per_gpu"
            elif t.state == "status" and (sm := _STATUS_RE.match(value)):
                t.add_status(sm.group("status"), sm.group("detail"))
            elif t.state == "text":
                t.texts[-1][1].append(chunk)
            else:
                raise ParseError(TOOL, "unexpected continuation row", line_no=line_no, line=line)
    if not complete and not partial:
        raise ParseError(TOOL, "table has no closing border - output truncated")
    if not tests and not cat_errors:
        raise ParseError(TOOL, "no test results in the table")
    built = [t.build() for t in tests]
    ids = metadata.get("GPU Device IDs Detected")
    return DcgmDiag(
        format="table",
        dcgm_version=metadata.get("DCGM Version"),
        driver_version=metadata.get("Driver Version Detected"),
        gpu_device_ids=tuple(i.strip() for i in ids.split(",")) if ids else (),
        tests=tuple(built),
        verdict=_verdict(built, len(cat_errors)),
        complete=complete,
        errors=tuple(f"{cat}: {''.join(chunks).strip()}" for cat, chunks in cat_errors),
    )


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict):
                text = item.get("warning") or item.get("error") or item.get("info")
                if not isinstance(text, str):
                    raise ParseError(TOOL, f"JSON warning entry without text: {item!r}")
                out.append(text)
            elif isinstance(item, str):
                out.append(item)
            else:
                raise ParseError(TOOL, f"JSON text entry of type {type(item).__name__}")
        return out
    raise ParseError(TOOL, f"JSON text field of type {type(value).__name__}")


def _status(value: Any, where: str) -> str:
    if value not in STATUSES:
        raise ParseError(TOOL, f"JSON {where}: unknown status {value!r}")
    return str(value)


def _parse_json(text: str) -> DcgmDiag:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(TOOL, f"invalid JSON ({exc.msg} at line {exc.lineno}) - output truncated?") from None
    if not isinstance(doc, dict):
        raise ParseError(TOOL, "JSON root is not an object")
    root_key = next((k for k in ("DCGM Diagnostic", "DCGM GPU Diagnostic") if k in doc), None)
    if root_key is None or not isinstance(doc[root_key], dict):
        raise ParseError(TOOL, "JSON has no 'DCGM Diagnostic'/'DCGM GPU Diagnostic' object")
    categories = doc[root_key].get("test_categories")
    runtime_error = doc[root_key].get("runtime_error")
    if not categories and isinstance(runtime_error, str) and runtime_error.strip():
        # nvvs' JSON when the run could not start: {"DCGM GPU Diagnostic": {"runtime_error": "...", ...}}
        return DcgmDiag("error", None, None, (), (), "Error", False, (runtime_error,))
    if not isinstance(categories, list) or not categories:
        raise ParseError(TOOL, "JSON has no test_categories")
    tests: list[DiagTest] = []
    for cat in categories:
        cat_name = cat.get("category")
        if not isinstance(cat_name, str) or not isinstance(cat.get("tests"), list):
            raise ParseError(TOOL, f"JSON category without name/tests: {cat!r}"[:200])
        for t in cat["tests"]:
            name, results = t.get("name"), t.get("results")
            if not isinstance(name, str) or not isinstance(results, list) or not results:
                raise ParseError(TOOL, f"JSON test without name/results in category {cat_name!r}")
            per_gpu: dict[int, str] = {}
            statuses, warnings, info = [], [], []
            for r in results:
                status = _status(r.get("status"), f"test {name!r}")
                statuses.append(status)
                warnings += _texts(r.get("warnings")) + _texts(r.get("error"))
                info += _texts(r.get("info"))
                if r.get("entity_group") == "GPU" and isinstance(r.get("entity_id"), int):
                    per_gpu[r["entity_id"]] = status
                elif isinstance(r.get("gpu_ids"), str) and r["gpu_ids"].strip():
                    for gpu in r["gpu_ids"].split(","):
                        per_gpu[int(gpu)] = status
            summary = t.get("test_summary")
            if isinstance(summary, dict):
                result = _status(summary.get("status"), f"test {name!r} summary")
                info += _texts(summary.get("info"))
                warnings += _texts(summary.get("warnings"))
            else:
                result = _worst(statuses)
            tests.append(DiagTest(name, cat_name, result, per_gpu, tuple(warnings), tuple(info)))
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else doc
    ids: tuple[str, ...] = ()
    for group in doc.get("entity_groups") or []:
        if group.get("entity_group") == "GPU":
            ids = tuple(str(e.get("device_id")) for e in group.get("entities", []))
    return DcgmDiag(
        format="json",
        dcgm_version=meta.get("version") or meta.get("DCGM Version"),
        driver_version=meta.get("Driver Version Detected"),
        gpu_device_ids=ids,
        tests=tuple(tests),
        verdict=_verdict(tests),
        complete=True,
    )


def parse_diag(text: str, *, partial: bool = False) -> DcgmDiag:
    """Parse ``dcgmi diag`` table output or ``dcgmi diag -j`` JSON (auto-detected).

    Wrapped Warning/Info texts are re-joined (dcgmi wraps at 45 characters, mid-word). DCGM 4.x per-GPU
    ``GPUn: Pass`` rows and 3.x ``Pass - GPUs: 1, 2`` / ``Fail - GPU: 0`` rows both fill ``per_gpu``.
    ``partial=True`` accepts an author's excerpt of the table (no header, no closing border, last row cut).
    An Error row that heads a category (DCGM 2.x/3.x: the category could not run) lands in ``errors`` and
    fails the verdict. When dcgmi aborted before any result (``Error: ...`` lines, one with
    ``Return: (-N)``), the result has ``format="error"``, no tests, verdict ``Error``, the lines in
    ``errors`` and the code in ``return_code``.
    """
    require_text(TOOL, text)
    if (aborted := _parse_abort(text)) is not None:
        return aborted
    if text.lstrip().startswith("{"):
        return _parse_json(text)
    return _parse_table(text, partial)
