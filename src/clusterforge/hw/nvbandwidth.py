"""``nvbandwidth`` output: per testcase a bandwidth matrix (GB/s) plus its SUM line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import content_lines, require_text, to_float
from .errors import ParseError

TOOL = "nvbandwidth"

_RUNNING_RE = re.compile(r"^Running (?P<name>[a-z0-9_]+)\.$")
_TITLE_RE = re.compile(r"^(?P<title>.+) \((?P<unit>[A-Za-z/]+)\)$")
_SUM_RE = re.compile(r"^SUM (?P<name>[a-z0-9_]+) (?P<value>\d+(?:\.\d+)?)$")
_CV_RE = re.compile(r"^COEFFICIENT_OF_VARIATION (?P<name>[a-z0-9_]+) (?P<value>\d+(?:\.\d+)?)$")
_DEVICE_RE = re.compile(r"^Device (?P<idx>\d+): (?P<name>.+)$")
_HEADER_KV = {
    "nvbandwidth Version": "version",
    "Built from Git version": "git_version",
    "CUDA Runtime Version": "cuda_runtime_version",
    "CUDA Driver Version": "cuda_driver_version",
    "Driver Version": "driver_version",
}


@dataclass(frozen=True)
class NvbTestcase:
    name: str
    title: str  # e.g. "memcpy CE CPU(row) -> GPU(column) bandwidth"
    unit: str  # "GB/s"
    columns: tuple[int, ...]
    matrix: Mapping[int, Mapping[int, float | None]]  # row -> column -> value (N/A -> None)
    sum: float | None
    coefficient_of_variation: float | None
    waived: bool = False

    def values(self) -> list[float]:
        return [v for row in self.matrix.values() for v in row.values() if v is not None]


@dataclass(frozen=True)
class NvBandwidth:
    version: str | None
    driver_version: str | None
    cuda_runtime_version: str | None
    cuda_driver_version: str | None
    devices: Mapping[int, str]
    testcases: Mapping[str, NvbTestcase]

    def __getitem__(self, name: str) -> NvbTestcase:
        return self.testcases[name]


class _Case:
    def __init__(self, name: str, line_no: int) -> None:
        self.name, self.line_no = name, line_no
        self.title: str | None = None
        self.unit = ""
        self.columns: tuple[int, ...] | None = None
        self.matrix: dict[int, dict[int, float | None]] = {}
        self.sum: float | None = None
        self.cv: float | None = None
        self.waived = False

    def build(self, partial: bool) -> NvbTestcase:
        if not self.waived:
            if self.title is None or self.columns is None or not self.matrix:
                raise ParseError(
                    TOOL,
                    f"testcase {self.name} has no bandwidth matrix - output truncated",
                    line_no=self.line_no,
                )
            if self.sum is None and not partial:
                raise ParseError(
                    TOOL, f"testcase {self.name} has no SUM line - output truncated", line_no=self.line_no
                )
        return NvbTestcase(
            self.name,
            self.title or "",
            self.unit,
            self.columns or (),
            self.matrix,
            self.sum,
            self.cv,
            self.waived,
        )


def parse(text: str, *, partial: bool = False) -> NvBandwidth:
    """Parse nvbandwidth output (version header optional). ``partial=True`` accepts ``[...]`` excerpts."""
    require_text(TOOL, text)
    header: dict[str, str] = {}
    devices: dict[int, str] = {}
    cases: list[_Case] = []
    for line_no, raw, line in content_lines(TOOL, text, partial, "elided output ('[...]')"):
        if m := _RUNNING_RE.match(line):
            if any(c.name == m.group("name") for c in cases):
                raise ParseError(TOOL, f"testcase {m.group('name')} run twice", line_no=line_no, line=raw)
            cases.append(_Case(m.group("name"), line_no))
            continue
        if not cases:
            key, sep, value = line.partition(": ")
            if dm := _DEVICE_RE.match(line):
                devices[int(dm.group("idx"))] = dm.group("name")
            elif sep and key in _HEADER_KV:
                header[_HEADER_KV[key]] = value.strip()
            elif not line.startswith(("NOTE:", "Additional system-specific")):
                raise ParseError(TOOL, "unrecognised header line", line_no=line_no, line=raw)
            continue
        case = cases[-1]
        if sm := _SUM_RE.match(line):
            if sm.group("name") != case.name or case.sum is not None:
                raise ParseError(TOOL, f"SUM line does not belong to testcase {case.name}", line_no=line_no)
            case.sum = float(sm.group("value"))
        elif cm := _CV_RE.match(line):
            if cm.group("name") != case.name:
                raise ParseError(TOOL, f"coefficient line does not belong to {case.name}", line_no=line_no)
            case.cv = float(cm.group("value"))
        elif line.startswith("Waived"):
            case.waived = True
        elif case.sum is not None:
            if not line.startswith(("NOTE:", "Performance can vary")):
                raise ParseError(TOOL, "unexpected line after SUM", line_no=line_no, line=raw)
        elif case.title is None:
            tm = _TITLE_RE.match(line)
            if not tm:
                raise ParseError(TOOL, f"expected the matrix title of {case.name}", line_no=line_no, line=raw)
            case.title, case.unit = tm.group("title"), tm.group("unit")
        elif case.columns is None:
            tokens = line.split()
            if not all(t.isdigit() for t in tokens):
                raise ParseError(TOOL, "expected matrix column indices", line_no=line_no, line=raw)
            case.columns = tuple(int(t) for t in tokens)
        else:
            tokens = line.split()
            if not tokens[0].isdigit() or len(tokens) != len(case.columns) + 1:
                raise ParseError(
                    TOOL, f"matrix row needs {len(case.columns)} values", line_no=line_no, line=raw
                )
            row = int(tokens[0])
            if row in case.matrix:
                raise ParseError(TOOL, f"matrix row {row} repeated", line_no=line_no, line=raw)
            case.matrix[row] = {
                col: None
                if tok == "N/A"
                else to_float(TOOL, tok, f"{case.name}[{row}][{col}]", line_no=line_no)
                for col, tok in zip(case.columns, tokens[1:], strict=True)
            }
    if not cases:
        raise ParseError(TOOL, "no 'Running <testcase>.' lines")
    built = {c.name: c.build(partial) for c in cases}
    return NvBandwidth(
        version=header.get("version"),
        driver_version=header.get("driver_version"),
        cuda_runtime_version=header.get("cuda_runtime_version"),
        cuda_driver_version=header.get("cuda_driver_version"),
        devices=devices,
        testcases=built,
    )
