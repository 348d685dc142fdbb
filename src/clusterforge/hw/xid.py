"""NVIDIA ``NVRM: Xid`` events from kernel logs: raw dmesg, ``dmesg -T``/``--ctime``, ``--time-format=iso``,
/dev/kmsg records, syslog and journalctl lines."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import split_lines
from .errors import ParseError

TOOL = "xid"

_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_HMS = r"\d\d:\d\d:\d\d"
_TAG = r"[\w.\-/@]+(?:\[\d+\])?"  # syslog/journal identifier: "kernel", "systemd[1]", ...
_ISO = rf"\d{{4}}-\d\d-\d\dT{_HMS}"
#: (format name, regex with a "ts" group for the timestamp and "msg" for the rest)
_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("monotonic", re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\] (?P<msg>.*)$")),
    ("ctime", re.compile(rf"^\[(?P<ts>{_DAY} {_MON} [ \d]\d \d\d:\d\d:\d\d \d{{4}})\] (?P<msg>.*)$")),
    ("journal-iso", re.compile(rf"^(?P<ts>{_ISO}(?:\.\d+)?[+-]\d{{4}}) \S+ {_TAG}: (?P<msg>.*)$")),
    ("iso", re.compile(rf"^(?P<ts>{_ISO}(?:[,.]\d+)?(?:[+-]\d\d:?\d\d|Z)) (?P<msg>.*)$")),
    ("syslog", re.compile(rf"^(?P<ts>{_MON} [ \d]\d {_HMS}) \S+ {_TAG}: (?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$")),
    ("kmsg", re.compile(r"^\d+,\d+,(?P<ts>\d+),[^;]*;(?P<msg>.*)$")),
    ("none", re.compile(r"^kernel: (?P<msg>.*)$")),
    ("none", re.compile(r"^(?P<msg>NVRM: .*)$")),
)
_XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(?P<xid>\d+), (?P<rest>.*)$"
)
_PID_RE = re.compile(r"^pid=(?:'<unknown>'|(?P<pid>\d+)), name=(?:<unknown>|(?P<name>[^,]*)), (?P<msg>.*)$")
_CAUSED_RE = re.compile(r"caused by previous Xid (?P<xid>\d+)")


@dataclass(frozen=True)
class XidEvent:
    pci_bus_id: str  # "0000:a1:00" as the driver prints it
    xid: int
    pid: int | None  # None when absent or '<unknown>'
    process_name: str | None
    message: str  # text after the pid/name fields
    timestamp: str | None  # as printed ("Fri Apr  5 21:29:39 2024", "93.317398", ISO ...)
    timestamp_format: str  # "monotonic" | "ctime" | "iso" | "syslog" | "journal-iso" | "kmsg" | "none"
    line_no: int
    caused_by_xid: int | None = None  # "... caused by previous Xid 149"


def parse(text: str) -> list[XidEvent]:
    """Every ``NVRM: Xid`` line, in order. Other kernel lines are skipped; an empty log yields ``[]``.

    Every non-blank line must be a kernel log line in one of the recognised forms (or an indented
    continuation line); anything else - or an ``NVRM: Xid`` line that cannot be decoded, e.g. one cut
    mid-line - raises :class:`ParseError`.
    """
    if not isinstance(text, str):
        raise ParseError(TOOL, f"expected text, got {type(text).__name__}")
    events: list[XidEvent] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[:1].isspace():
            if "Xid" in line and "NVRM" in line:
                raise ParseError(TOOL, "Xid text on a continuation line", line_no=line_no, line=raw)
            continue
        found = next(((f, m) for f, regex in _PREFIXES if (m := regex.match(line))), None)
        if found is None:
            raise ParseError(TOOL, "not a recognised kernel log line", line_no=line_no, line=raw)
        fmt, pm = found
        msg = pm.group("msg")
        if "NVRM: Xid" not in msg:
            continue
        xm = _XID_RE.search(msg)
        if not xm:
            raise ParseError(TOOL, "undecodable NVRM Xid line (truncated?)", line_no=line_no, line=raw)
        rest = xm.group("rest")
        pid: int | None = None
        name: str | None = None
        if rest.startswith("pid="):
            pidm = _PID_RE.match(rest)
            if not pidm:
                raise ParseError(TOOL, "undecodable pid/name fields", line_no=line_no, line=raw)
            pid = int(pidm.group("pid")) if pidm.group("pid") else None
            name = pidm.group("name")
            rest = pidm.group("msg")
        caused = _CAUSED_RE.search(rest)
        events.append(
            XidEvent(
                pci_bus_id=xm.group("bus"),
                xid=int(xm.group("xid")),
                pid=pid,
                process_name=name,
                message=rest.strip(),
                timestamp=pm.groupdict().get("ts"),
                timestamp_format=fmt,
                line_no=line_no,
                caused_by_xid=int(caused.group("xid")) if caused else None,
            )
        )
    return events
