"""`ibqueryerrors` output: ports whose error counters are over ibqueryerrors' thresholds.

Port lines are ``GUID <guid> port <N|ALL>: [<Counter> == <value>( (<human>))?] ...``; newer
infiniband-diags add the human-readable form in parentheses (``2846 (2.779K)``). Node lines
(``Errors for <guid> "<description>"``) and summary lines (``## Summary: ...``, ``## Checked ...``,
``Suppressing: ...``) are recognised and skipped; any other line raises ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "ibqueryerrors"

_PORT = re.compile(r"^GUID\s+(0x[0-9a-fA-F]+)\s+port\s+(\d+|ALL):\s*(.*)$")
_ITEM = re.compile(r"\[(\w+)\s*==\s*(\d+)(?:\s*\([^)]*\))?\]")
_SKIP = ("Errors for", "##", "Suppressing", "Switch", "CA", "Router")


@dataclass(frozen=True)
class PortErrors:
    guid: str
    port: int | None  # None for "ALL" (data summed over the node's ports)
    counters: dict[str, int] = field(hash=False)


def parse(text: str, *, partial: bool = False) -> tuple[PortErrors, ...]:
    require_text(TOOL, text)
    lines = split_lines(text)
    out: list[PortErrors] = []
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(_SKIP):
            continue
        m = _PORT.match(line)
        items = _ITEM.findall(m.group(3)) if m else []
        rest = _ITEM.sub("", m.group(3)).strip() if m else line
        if m is None or not items or rest:
            if partial and all(not ln.strip() for ln in lines[no:]) and m and items:
                out.append(PortErrors(m.group(1).lower(), _port(m.group(2)), {k: int(v) for k, v in items}))
                break
            raise ParseError(TOOL, "unrecognised line (cut output?)", line_no=no, line=raw)
        out.append(PortErrors(m.group(1).lower(), _port(m.group(2)), {k: int(v) for k, v in items}))
    return tuple(out)


def _port(value: str) -> int | None:
    return None if value == "ALL" else int(value)
