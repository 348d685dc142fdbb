"""Small helpers shared by the parsers (not part of the public API)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from .errors import ParseError

#: Lines an author puts where they cut real output ("[...]", "...", "(...)").
ELISION_MARKERS = frozenset({"[...]", "...", "(...)", "[…]", "…"})

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: util-linux's human sizes (``11.6T``, ``512M``, ``4K``): powers of 1024
_SIZE_UNITS = {"": 1, "B": 1} | {u: 1 << (10 * i) for i, u in enumerate("KMGTPE", 1)}
_HUMAN_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGTPE]?)(?:i?B)?$")
_CPULIST_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def is_elision(line: str) -> bool:
    """True for a line that is only an author's elision marker."""
    return line.strip() in ELISION_MARKERS


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def split_lines(text: str) -> list[str]:
    """Split on newlines (CRLF tolerated) keeping leading whitespace; trailing whitespace is kept too."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def content_lines(tool: str, text: str, partial: bool, elided: str) -> Iterator[tuple[int, str, str]]:
    """(1-based line number, raw line, stripped line) of each non-blank line. An elision marker is skipped
    with ``partial``, else a ParseError with the message ``elided``."""
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if is_elision(line):
            if partial:
                continue
            raise ParseError(tool, elided, line_no=line_no, line=raw)
        yield line_no, raw, line


def numbered(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line)."""
    return ((i + 1, line) for i, line in enumerate(lines))


def require_text(tool: str, text: str) -> None:
    if not isinstance(text, str):
        raise ParseError(tool, f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise ParseError(tool, "empty output")


def load_json(tool: str, text: str, root: type[dict[str, Any]] | type[list[Any]], hint: str = "") -> Any:
    """The JSON document ``tool`` printed, whose root must be a ``root`` (dict or list); ParseError for
    empty text, text that is not JSON (``hint``: how to get JSON, e.g. "run with -j") or another root."""
    require_text(tool, text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        how = f" ({hint})" if hint else ""
        raise ParseError(tool, f"not JSON{how}: {e.msg}", line_no=e.lineno) from None
    if not isinstance(doc, root):
        kind = "object" if root is dict else "array"
        raise ParseError(tool, f"expected a JSON {kind}, found {type(doc).__name__}")
    return doc


def is_cpulist(value: str) -> bool:
    return bool(_CPULIST_RE.match(value))


def parse_cpulist(value: str) -> tuple[int, ...]:
    """Expand a Linux CPU list ("0-15,128-143") into sorted CPU numbers."""
    value = value.strip()
    if not _CPULIST_RE.match(value):
        raise ValueError(f"not a CPU list: {value!r}")
    cpus: set[int] = set()
    for part in value.split(","):
        lo, _, hi = part.partition("-")
        start, end = int(lo), int(hi) if hi else int(lo)
        if end < start:
            raise ValueError(f"descending range in CPU list: {value!r}")
        cpus.update(range(start, end + 1))
    return tuple(sorted(cpus))


def to_int(tool: str, value: str, what: str, *, line_no: int | None = None, base: int = 10) -> int:
    try:
        return int(value.strip(), base)
    except ValueError:
        raise ParseError(tool, f"{what} is not an integer: {value!r}", line_no=line_no) from None


def to_float(tool: str, value: str, what: str, *, line_no: int | None = None) -> float:
    try:
        return float(value.strip())
    except ValueError:
        raise ParseError(tool, f"{what} is not a number: {value!r}", line_no=line_no) from None


def to_bytes(tool: str, value: Any, what: str, *, human: bool) -> int | None:
    """A size from a JSON field: None when absent, a number, or a numeric string (``--bytes``); with
    ``human`` also util-linux's human form (``11.6T``, powers of 1024). Anything else is a ParseError."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParseError(tool, f"{what}: not a size: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and human:
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    m = _HUMAN_SIZE_RE.match(value.strip()) if human and isinstance(value, str) else None
    if not m:
        hint = "" if human else " (run with --bytes)"
        raise ParseError(tool, f"{what}: not a size{hint}: {value!r}")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])
