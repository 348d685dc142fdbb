"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` output."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._common import is_elision, require_text, split_lines
from ..errors import ParseError

TOOL = "nvidia-smi --query-gpu"

Value = str | float | int | None

#: Field aliases accepted by nvidia-smi; the header always prints the canonical (left) name.
ALIASES: dict[str, str] = {
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_serial": "serial",
    "gpu_uuid": "uuid",
    "gom.current": "gpu_operation_mode.current",
    "gom.pending": "gpu_operation_mode.pending",
    "clocks.gr": "clocks.current.graphics",
    "clocks.sm": "clocks.current.sm",
    "clocks.mem": "clocks.current.memory",
    "clocks.video": "clocks.current.video",
    "clocks.max.gr": "clocks.max.graphics",
    "clocks.max.mem": "clocks.max.memory",
    "clocks.applications.gr": "clocks.applications.graphics",
    "clocks.applications.mem": "clocks.applications.memory",
}

#: Fields whose values are identifiers even when they look numeric (serials, versions, ids).
STRING_FIELDS = frozenset(
    {
        "name",
        "serial",
        "uuid",
        "vbios_version",
        "driver_version",
        "timestamp",
        "pstate",
        "compute_mode",
        "persistence_mode",
        "display_mode",
        "display_active",
        "mig.mode.current",
        "mig.mode.pending",
        "ecc.mode.current",
        "ecc.mode.pending",
        "board_id",
        "module_id",
        "gpu_part_number",
    }
)

NULL_VALUES = frozenset({"[N/A]", "N/A", "[Not Supported]", "Not Supported"})

#: Units nvidia-smi appends to values when ``nounits`` is not given.
KNOWN_UNITS = ("MiB", "GiB", "KiB", "%", "W", "MHz", "KB/s", "us", "ms", "s", "mV", "C")

_HEADER_CELL_RE = re.compile(r"^(?P<name>[a-z_][a-z0-9_.]*)(?: \[(?P<unit>[^\]]+)\])?$")
_INT_RE = re.compile(r"^-?\d+$")
_FLOAT_RE = re.compile(r"^-?\d+\.\d+$")


def canonical_field(field: str) -> str:
    field = field.strip().lower()
    return ALIASES.get(field, field)


def _is_string_field(canon: str) -> bool:
    return canon in STRING_FIELDS or canon.startswith(("pci.", "inforom.", "clocks_event_reasons.active"))


def _convert(raw: str, canon: str, unit: str | None) -> Value:
    value = raw.strip()
    if value in NULL_VALUES:
        return None
    if _is_string_field(canon):
        return value
    number = value
    if unit and value.endswith(" " + unit):
        number = value[: -len(unit) - 1]
    elif unit is None:
        for known in KNOWN_UNITS:
            if value.endswith(" " + known):
                number = value[: -len(known) - 1]
                break
    if _INT_RE.match(number):
        return int(number)
    if _FLOAT_RE.match(number):
        return float(number)
    return value


def _split(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def parse_query_csv(text: str, fields: Sequence[str], *, partial: bool = False) -> list[dict[str, Value]]:
    """Parse ``--format=csv`` (with or without ``noheader``/``nounits``) into one dict per GPU row.

    Keys are the requested ``fields`` exactly as given. When a header is present it must name the
    requested fields (aliases such as ``gpu_name``/``name`` are accepted) in the same order; units in
    the header (``memory.total [MiB]``) are stripped and also removed from values. ``[N/A]``, ``N/A`` and
    ``[Not Supported]`` become ``None``; numeric values become int/float except for identifier fields
    (serial, uuid, vbios, pci.*, driver version ...). ``partial=True`` skips author elision lines (``[...]``).
    """
    require_text(TOOL, text)
    if not fields:
        raise ParseError(TOOL, "no fields requested")
    wanted = [canonical_field(f) for f in fields]
    lines = [(i + 1, line.rstrip()) for i, line in enumerate(split_lines(text)) if line.strip()]
    units: list[str | None] = [None] * len(fields)
    first_no, first = lines[0]
    header_cells = _split(first)
    header_matches = [_HEADER_CELL_RE.match(c) for c in header_cells]
    if all(header_matches):
        names = [canonical_field(m.group("name")) for m in header_matches if m]
        if names != wanted:
            raise ParseError(
                TOOL, f"header names {names} do not match requested fields {wanted}", line_no=first_no
            )
        units = [m.group("unit") if m else None for m in header_matches]
        lines = lines[1:]
        if not lines:
            raise ParseError(TOOL, "header only, no GPU rows")
    rows: list[dict[str, Value]] = []
    for line_no, line in lines:
        if is_elision(line):
            if partial:
                continue
            raise ParseError(TOOL, "elided output ('[...]') - rows are missing", line_no=line_no, line=line)
        cells = _split(line)
        if len(cells) != len(fields):
            raise ParseError(
                TOOL, f"expected {len(fields)} values, got {len(cells)}", line_no=line_no, line=line
            )
        if any(
            _HEADER_CELL_RE.match(c) and canonical_field(c) == w for c, w in zip(cells, wanted, strict=True)
        ):
            raise ParseError(TOOL, "unexpected second header line", line_no=line_no, line=line)
        rows.append(
            {
                field: _convert(cell, canon, unit)
                for field, canon, cell, unit in zip(fields, wanted, cells, units, strict=True)
            }
        )
    if not rows:
        raise ParseError(TOOL, "no GPU rows")
    return rows
