"""perftest output: ``ib_write_bw`` / ``ib_read_bw`` / ``ib_send_bw`` and ``ib_*_lat``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import require_text, split_lines, to_float, to_int
from .errors import ParseError

TOOL_BW = "perftest bw"
TOOL_LAT = "perftest lat"

_DASHES_RE = re.compile(r"^-{20,}$")
_TITLE_RE = re.compile(r"^(?P<title>[A-Za-z_ ]+(?:BW|Latency) Test)$")
_PAIR_RE = re.compile(r"(?P<key>[A-Za-z][\w*.\- ]*?)\s*:\s*(?P<value>\S+)")
_ADDR_RE = re.compile(r"^(?P<side>local|remote) address: LID (?P<lid>\S+) QPN (?P<qpn>\S+) PSN (?P<psn>\S+)")
_GID_RE = re.compile(r"^GID: (?P<gid>[0-9a-fA-F:]+)$")
_CPUFREQ_RE = re.compile(r"^Conflicting CPU frequency values detected: .*$")
_COL_RE = re.compile(
    r"(#bytes|#iterations|BW peak\[[^\]]+\]|BW average\[[^\]]+\]|MsgRate\[[^\]]+\]|"
    r"t_min\[usec\]|t_max\[usec\]|t_typical\[usec\]|t_avg\[usec\]|t_stdev\[usec\]|"
    r"99% percentile\[usec\]|99\.9% percentile\[usec\])"
)
_ERROR_MARKERS = (
    "Completion with error",
    "Failed status",
    "Failed to complete",
    "Couldn't",
    "Unable to",
    "scnt=",
    "Error",
    "error",
)
#: perftest's MB/sec is 2^20 bytes/s (format_factor 0x100000); Gb/sec is 10^9 bit/s.
_TO_GBITS = {"Gb/sec": 1.0, "MB/sec": 1048576 * 8 / 1e9}


@dataclass(frozen=True)
class PerftestHeader:
    test: str  # e.g. "RDMA_Write BW Test", "RDMA_Read Latency Test"
    settings: Mapping[str, str]  # "Device" -> "mlx5_0", "Mtu" -> "4096[B]", "Link type" -> "IB", ...
    device: str
    transport: str | None
    connection: str | None
    link_type: str | None
    mtu: int | None
    gid_index: int | None
    local_lid: str | None
    remote_lid: str | None
    local_gid: str | None
    remote_gid: str | None
    warnings: tuple[str, ...]  # "WARNING: ..." and every "Conflicting CPU frequency values detected" line
    errors: tuple[str, ...]  # failure lines ("Completion with error at client", ...)
    completed: bool  # table closed by its dashed line (False when the run died part-way)

    @property
    def cpufreq_warnings(self) -> int:
        return sum(1 for w in self.warnings if _CPUFREQ_RE.match(w))


@dataclass(frozen=True)
class BwRow:
    bytes: int
    iterations: int
    bw_peak: float  # in `unit`
    bw_average: float
    msg_rate_mpps: float
    bw_peak_gbps: float  # normalised to Gb/s (10^9 bit/s)
    bw_average_gbps: float


@dataclass(frozen=True)
class PerftestBw:
    header: PerftestHeader
    unit: str  # "MB/sec" or "Gb/sec" as printed
    rows: tuple[BwRow, ...]

    @property
    def peak_average_gbps(self) -> float:
        return max(r.bw_average_gbps for r in self.rows)


@dataclass(frozen=True)
class LatRow:
    bytes: int
    iterations: int
    t_min: float  # usec
    t_max: float
    t_typical: float
    t_avg: float | None  # None on old perftest without these columns
    t_stdev: float | None
    p99: float | None
    p99_9: float | None


@dataclass(frozen=True)
class PerftestLat:
    header: PerftestHeader
    rows: tuple[LatRow, ...]


def _parse(
    tool: str, text: str, kind: str
) -> tuple[PerftestHeader, list[str], list[tuple[int, list[str]]], str]:
    require_text(tool, text)
    lines = split_lines(text)
    title_at = next((i for i, line in enumerate(lines) if _TITLE_RE.match(line.strip())), None)
    if title_at is None:
        raise ParseError(tool, "no '... BW Test' / '... Latency Test' title - not perftest output")
    title = lines[title_at].strip()
    if (kind == "BW") != title.endswith("BW Test"):
        raise ParseError(tool, f"this is a {title!r} report", line_no=title_at + 1)
    warnings = [line.strip() for line in lines[:title_at] if line.strip().upper().startswith("WARNING")]
    settings: dict[str, str] = {}
    addr: dict[str, str] = {}
    side = ""
    columns: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    errors: list[str] = []
    dashes_after_table = False
    for idx in range(title_at + 1, len(lines)):
        raw, line_no = lines[idx], idx + 1
        line = raw.strip()
        if not line:
            continue
        if _DASHES_RE.match(line):
            if columns and rows:
                dashes_after_table = True
            continue
        if dashes_after_table:
            continue  # tool epilogue (e.g. "deallocating GPU buffer") after the closing dashes
        if _CPUFREQ_RE.match(line) or line.upper().startswith("WARNING"):
            warnings.append(line)
        elif line.startswith("#bytes"):
            columns = _COL_RE.findall(line)
            if not columns or columns[:2] != ["#bytes", "#iterations"]:
                raise ParseError(tool, "unrecognised table header", line_no=line_no, line=raw)
        elif columns:
            tokens = line.split()
            if tokens and tokens[0].isdigit() and len(tokens) == len(columns):
                rows.append((line_no, tokens))
            elif any(marker in line for marker in _ERROR_MARKERS):
                errors.append(line)
            else:
                raise ParseError(tool, "unrecognised line in result table", line_no=line_no, line=raw)
        elif m := _ADDR_RE.match(line):
            side = m.group("side")
            addr[f"{side}_lid"] = m.group("lid")
        elif m := _GID_RE.match(line):
            addr[f"{side}_gid"] = m.group("gid")
        else:
            pairs = _PAIR_RE.findall(line)
            if not pairs:
                raise ParseError(tool, "unrecognised header line", line_no=line_no, line=raw)
            settings.update({k.strip(): v for k, v in pairs})
    if "Device" not in settings:
        raise ParseError(tool, "header has no 'Device' setting - output truncated")
    if not columns:
        raise ParseError(tool, "no '#bytes ...' result table - output truncated")
    if not rows and not errors:
        raise ParseError(tool, "result table has no rows - output truncated")
    if not dashes_after_table and not errors:
        raise ParseError(tool, "result table not closed by a dashed line - output truncated")
    mtu = settings.get("Mtu")
    gid = settings.get("GID index")
    header = PerftestHeader(
        test=title,
        settings=settings,
        device=settings["Device"],
        transport=settings.get("Transport type"),
        connection=settings.get("Connection type"),
        link_type=settings.get("Link type"),
        mtu=to_int(tool, mtu.removesuffix("[B]"), "Mtu") if mtu else None,
        gid_index=to_int(tool, gid, "GID index") if gid else None,
        local_lid=addr.get("local_lid"),
        remote_lid=addr.get("remote_lid"),
        local_gid=addr.get("local_gid"),
        remote_gid=addr.get("remote_gid"),
        warnings=tuple(warnings),
        errors=tuple(errors),
        completed=dashes_after_table and not errors,
    )
    return header, columns, rows, title


def parse_bw(text: str) -> PerftestBw:
    """Parse ``ib_write_bw``/``ib_read_bw``/``ib_send_bw``; BW columns are also normalised to Gb/s."""
    header, columns, rows, _ = _parse(TOOL_BW, text, "BW")
    names = [c.split("[")[0] for c in columns]
    if names != ["#bytes", "#iterations", "BW peak", "BW average", "MsgRate"]:
        raise ParseError(TOOL_BW, f"unexpected columns {columns}")
    unit = columns[2][columns[2].index("[") + 1 : -1]
    if unit not in _TO_GBITS or columns[3] != f"BW average[{unit}]":
        raise ParseError(TOOL_BW, f"unknown bandwidth unit {unit!r}")
    factor = _TO_GBITS[unit]
    out = []
    for line_no, t in rows:
        peak = to_float(TOOL_BW, t[2], "BW peak", line_no=line_no)
        avg = to_float(TOOL_BW, t[3], "BW average", line_no=line_no)
        out.append(
            BwRow(
                bytes=to_int(TOOL_BW, t[0], "#bytes", line_no=line_no),
                iterations=to_int(TOOL_BW, t[1], "#iterations", line_no=line_no),
                bw_peak=peak,
                bw_average=avg,
                msg_rate_mpps=to_float(TOOL_BW, t[4], "MsgRate", line_no=line_no),
                bw_peak_gbps=peak * factor,
                bw_average_gbps=avg * factor,
            )
        )
    return PerftestBw(header, unit, tuple(out))


def parse_lat(text: str) -> PerftestLat:
    """Parse ``ib_write_lat``/``ib_read_lat``/``ib_send_lat`` (5-column old and 9-column new reports)."""
    header, columns, rows, _ = _parse(TOOL_LAT, text, "Latency")
    names = [c.split("[")[0] for c in columns]
    base = ["#bytes", "#iterations", "t_min", "t_max", "t_typical"]
    full = [*base, "t_avg", "t_stdev", "99% percentile", "99.9% percentile"]
    if names not in (base, full):
        raise ParseError(TOOL_LAT, f"unexpected columns {columns}")
    out = []
    for line_no, t in rows:
        v = [to_float(TOOL_LAT, x, names[i], line_no=line_no) for i, x in enumerate(t)]
        extra = v[5:] if len(v) == 9 else [None, None, None, None]
        out.append(LatRow(int(v[0]), int(v[1]), v[2], v[3], v[4], extra[0], extra[1], extra[2], extra[3]))
    return PerftestLat(header, tuple(out))
