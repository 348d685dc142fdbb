"""nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ...) output."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines, to_float, to_int
from .errors import ParseError

TOOL = "nccl-tests"

_RANK_RE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)\s+Group\s+(?P<group>\d+)\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.+)$"
)
_AVG_RE = re.compile(r"^# Avg bus bandwidth\s*: (?P<value>\S+)\s*$")
_OOB_RE = re.compile(r"^# Out of bounds values\s*: (?P<value>\d+) (?P<status>OK|FAILED)\s*$")
_VERSION_RE = re.compile(r"^NCCL version (?P<version>\S+)")
_NCCL_DEBUG_RE = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)")
#: Open MPI's help aggregation, printed by mpirun among the ranks' output (any place, even inside the table)
_MPI_HELP_RE = re.compile(
    r"^\[[^\]\s]+:\d+\] (?:\d+ more processes? ha(?:ve|s) sent help message .*"
    r"|Set MCA parameter \"(?:orte|prte)_base_help_aggregate\" to 0 to see all help / error messages)$"
)
_FAILURE_RE = re.compile(r"(Test NCCL failure|Test CUDA failure|Test failure)")
_PARAM_RE = re.compile(
    r"(nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|iters:|agg iters:|validation:|graph:)"
    r" (\S+)"
)
_COLUMNS = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "error")


@dataclass(frozen=True)
class NcclMeasure:
    time_us: float
    algbw_gbps: float  # GB/s
    busbw_gbps: float  # GB/s
    wrong: int | None  # "#wrong" (None when printed as N/A, i.e. validation disabled)
    error: float | None = None  # very old nccl-tests printed a max-error column instead of #wrong


@dataclass(frozen=True)
class NcclRow:
    size_bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: NcclMeasure
    in_place: NcclMeasure


@dataclass(frozen=True)
class NcclRank:
    rank: int
    group: int
    pid: int
    host: str
    device: int
    bus_id: str  # "0000:8f:00" (newer) or "0x04" (older builds)
    name: str


@dataclass(frozen=True)
class NcclResult:
    nccl_version: str | None
    params: dict[str, str]  # from the "# nThread ..." line: nThread, nGpus, minBytes, maxBytes, iters ...
    ranks: tuple[NcclRank, ...]
    rows: tuple[NcclRow, ...]
    avg_bus_bandwidth: float | None  # GB/s; None only when the run failed before printing it
    out_of_bounds: int | None
    wrong_total: int | None  # sum of #wrong over all rows and both modes; None if all were N/A
    wrong_na: bool  # some #wrong printed as N/A
    errors: tuple[str, ...]  # failure lines (e.g. "Test NCCL failure ...")

    @property
    def max_busbw(self) -> float:
        return max(max(r.out_of_place.busbw_gbps, r.in_place.busbw_gbps) for r in self.rows)

    def row(self, size_bytes: int) -> NcclRow:
        for r in self.rows:
            if r.size_bytes == size_bytes:
                return r
        raise KeyError(size_bytes)


def _measure(tokens: list[str], cols: list[str], line_no: int) -> NcclMeasure:
    values = dict(zip(cols, tokens, strict=True))
    wrong_raw = values.get("#wrong")
    wrong = None if wrong_raw in (None, "N/A") else to_int(TOOL, wrong_raw, "#wrong", line_no=line_no)
    error_raw = values.get("error")
    return NcclMeasure(
        time_us=to_float(TOOL, values["time"], "time", line_no=line_no),
        algbw_gbps=to_float(TOOL, values["algbw"], "algbw", line_no=line_no),
        busbw_gbps=to_float(TOOL, values["busbw"], "busbw", line_no=line_no),
        wrong=wrong,
        error=None if error_raw in (None, "N/A") else to_float(TOOL, error_raw, "error", line_no=line_no),
    )


def _columns(line: str, line_no: int) -> tuple[list[str], list[str]]:
    names = line.lstrip("#").split()
    if any(n not in _COLUMNS for n in names):
        raise ParseError(TOOL, "unknown column in table header", line_no=line_no, line=line)
    try:
        split = names.index("time")
        second = names.index("time", split + 1)
    except ValueError:
        raise ParseError(
            TOOL, "table header lacks out-of-place and in-place 'time' columns", line_no=line_no
        ) from None
    lead, oop, ip = names[:split], names[split:second], names[second:]
    if oop != ip or not {"size", "count", "type"} <= set(lead) or not {"algbw", "busbw"} <= set(oop):
        raise ParseError(TOOL, "unexpected table header layout", line_no=line_no, line=line)
    return lead, oop


def parse(text: str) -> NcclResult:
    """Parse one nccl-tests run. Launcher noise before the ``# nThread`` line is ignored, and so are Open
    MPI's help-aggregation lines (``[host:pid] N more processes have sent help message ...``,
    ``Set MCA parameter "orte_base_help_aggregate" ...``) wherever mpirun interleaves them.

    Requires the column header, at least one data row and the ``# Avg bus bandwidth`` footer (its absence
    means the output was truncated), unless the run printed a failure line, which lands in ``errors``.
    """
    require_text(TOOL, text)
    lines = split_lines(text)
    start = next((i for i, line in enumerate(lines) if line.startswith("# nThread ")), None)
    if start is None:
        raise ParseError(TOOL, "no '# nThread ...' parameter line - not nccl-tests output")
    params = {k.rstrip(":"): v for k, v in _PARAM_RE.findall(lines[start])}
    version = next((m.group("version") for line in lines if (m := _VERSION_RE.match(line))), None)
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    errors: list[str] = []
    lead: list[str] | None = None
    measure_cols: list[str] = []
    avg: float | None = None
    oob: int | None = None
    for idx in range(start + 1, len(lines)):
        line, line_no = lines[idx].rstrip(), idx + 1
        stripped = line.strip()
        if not stripped or stripped == "#" or _VERSION_RE.match(line) or _NCCL_DEBUG_RE.match(line):
            continue
        if _MPI_HELP_RE.match(stripped):
            continue
        if _FAILURE_RE.search(line):
            errors.append(stripped)
            continue
        if m := _RANK_RE.match(line):
            ranks.append(
                NcclRank(
                    int(m.group("rank")),
                    int(m.group("group")),
                    int(m.group("pid")),
                    m.group("host"),
                    int(m.group("device")),
                    m.group("bus"),
                    m.group("name").strip(),
                )
            )
            continue
        if m := _AVG_RE.match(line):
            avg = to_float(TOOL, m.group("value"), "Avg bus bandwidth", line_no=line_no)
            continue
        if m := _OOB_RE.match(line):
            oob = int(m.group("value"))
            continue
        if line.startswith("#"):
            body = line.lstrip("#").split()
            if body[:1] == ["size"]:
                lead, measure_cols = _columns(line, line_no)
            elif body[:1] not in (["Using"], ["out-of-place"], ["(B)"], ["Collective"], ["nccl-tests"]):
                raise ParseError(TOOL, "unrecognised comment line", line_no=line_no, line=line)
            continue
        if lead is None:
            raise ParseError(TOOL, "data before the table header", line_no=line_no, line=line)
        tokens = line.split()
        if len(tokens) != len(lead) + 2 * len(measure_cols):
            raise ParseError(
                TOOL,
                f"row has {len(tokens)} values, header has {len(lead) + 2 * len(measure_cols)}",
                line_no=line_no,
                line=line,
            )
        head = dict(zip(lead, tokens, strict=False))
        n = len(lead)
        m_len = len(measure_cols)
        rows.append(
            NcclRow(
                size_bytes=to_int(TOOL, head["size"], "size", line_no=line_no),
                count=to_int(TOOL, head["count"], "count", line_no=line_no),
                type=head["type"],
                redop=head.get("redop"),
                root=to_int(TOOL, head["root"], "root", line_no=line_no) if "root" in head else None,
                out_of_place=_measure(tokens[n : n + m_len], measure_cols, line_no),
                in_place=_measure(tokens[n + m_len :], measure_cols, line_no),
            )
        )
    if lead is None and not errors:
        raise ParseError(TOOL, "no table header ('#  size  count ...') - output truncated")
    if not rows and not errors:
        raise ParseError(TOOL, "no result rows - output truncated")
    if avg is None and not errors:
        raise ParseError(TOOL, "no '# Avg bus bandwidth' footer - output truncated")
    wrongs = [m.wrong for r in rows for m in (r.out_of_place, r.in_place)]
    known = [w for w in wrongs if w is not None]
    return NcclResult(
        nccl_version=version,
        params=params,
        ranks=tuple(ranks),
        rows=tuple(rows),
        avg_bus_bandwidth=avg,
        out_of_bounds=oob,
        wrong_total=sum(known) if known else None,
        wrong_na=any(w is None for w in wrongs) and "#wrong" in measure_cols,
        errors=tuple(errors),
    )
