"""NVIDIA ``NVRM: Xid`` events from kernel logs: raw dmesg, ``dmesg -T``/``--ctime``, ``--time-format=iso``,
``dmesg --decode`` (``kern  :warn  : ...``), /dev/kmsg records, syslog and journalctl lines; and the driver's
"GPU has fallen off the bus" message printed without an Xid line, as a GPU-lost event (Xid 79)."""

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
#: ``dmesg --decode`` (``-x``) facility/level prefix, before the timestamp (if any)
_DECODE_RE = re.compile(
    r"^(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:"
    r"(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*: (?P<rest>.*)$"
)
_XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(?P<xid>\d+), (?P<rest>.*)$"
)
#: "pid=1234, name=python3, ..." (older drivers: "pid=1234, ..." with no name field)
_PID_RE = re.compile(
    r"^pid=(?:'<unknown>'|(?P<pid>\d+))(?:, name=(?:<unknown>|(?P<name>[^,]*)))?, (?P<msg>.*)$"
)
#: the GPU-lost message: "NVRM: The NVIDIA GPU 0000:b3:00.0 / (PCI ID: 10de:26b5) installed in this system has
#: / fallen off the bus and is not responding to commands." (one record over 3 lines), or the one-line
#: "NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus." the driver prints beside Xid 79
_LOST_START_RE = re.compile(
    r"NVRM: The NVIDIA GPU (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
)
_LOST_LINE_RE = re.compile(
    r"NVRM: GPU (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): GPU has fallen off the bus"
)
GPU_LOST_XID = 79
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
    gpu_lost: bool = False  # not an Xid line: the driver's "fallen off the bus" message, reported as Xid 79

    @property
    def bus(self) -> str:
        """The GPU's bus id without the PCI function, lower case (``0000:b3:00``): one name per GPU."""
        return _bus(self.pci_bus_id)


def _bus(bus: str) -> str:
    """Bus id without the PCI function, lower case: ``0000:B3:00.0`` → ``0000:b3:00``."""
    return bus.lower()[:10]


def _split_prefix(line: str) -> tuple[str, str | None, str] | None:
    """(timestamp format, timestamp, message) of a kernel log line, or None if unrecognised."""
    decoded = _DECODE_RE.match(line)
    body = decoded.group("rest") if decoded else line
    for fmt, regex in _PREFIXES:
        if m := regex.match(body):
            return fmt, m.groupdict().get("ts"), m.group("msg")
    return ("none", None, body) if decoded else None


def parse(text: str) -> list[XidEvent]:
    """Every ``NVRM: Xid`` line, in order, plus a GPU-lost event (``xid=79``, ``gpu_lost=True``) for each
    "fallen off the bus" message whose GPU has no Xid 79 line in the same log. Other kernel lines are
    skipped; an empty log yields ``[]``.

    Every non-blank line must be a kernel log line in one of the recognised forms (or an indented
    continuation line); anything else - or an ``NVRM: Xid`` line that cannot be decoded, e.g. one cut
    mid-line - raises :class:`ParseError`.
    """
    if not isinstance(text, str):
        raise ParseError(TOOL, f"expected text, got {type(text).__name__}")
    events: list[XidEvent] = []
    lost: list[XidEvent] = []
    pending: tuple[XidEvent, list[str]] | None = None  # a multi-line GPU-lost message being read
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[:1].isspace():
            if "Xid" in line and "NVRM" in line:
                raise ParseError(TOOL, "Xid text on a continuation line", line_no=line_no, line=raw)
            if pending:
                pending[1].append(line.strip())
            continue
        found = _split_prefix(line)
        if found is None:
            raise ParseError(TOOL, "not a recognised kernel log line", line_no=line_no, line=raw)
        fmt, ts, msg = found
        if pending and msg.startswith("NVRM: ") and not pending[1][-1].rstrip().endswith("."):
            pending[1].append(msg)  # journal/syslog print each line of the record with its own prefix
            continue
        if pending:
            lost += _finish_lost(*pending)
            pending = None
        if sm := _LOST_START_RE.search(msg):
            pending = (_lost_event(sm.group("bus"), ts, fmt, line_no), [msg])
            continue
        if lm := _LOST_LINE_RE.search(msg):
            lost.append(_lost_event(lm.group("bus"), ts, fmt, line_no, msg[lm.start() :]))
            continue
        if "NVRM: Xid" not in msg:
            continue
        events.append(_xid_event(msg, ts, fmt, line_no, raw))
    if pending:
        lost += _finish_lost(*pending)
    with_79 = {_bus(e.pci_bus_id) for e in events if e.xid == GPU_LOST_XID}
    seen: set[str] = set()
    for ev in lost:
        if _bus(ev.pci_bus_id) not in with_79 | seen:
            seen.add(_bus(ev.pci_bus_id))
            events.append(ev)
    return sorted(events, key=lambda e: e.line_no)


def _lost_event(bus: str, ts: str | None, fmt: str, line_no: int, message: str = "") -> XidEvent:
    return XidEvent(_bus(bus), GPU_LOST_XID, None, None, message, ts, fmt, line_no, gpu_lost=True)


def _finish_lost(ev: XidEvent, parts: list[str]) -> list[XidEvent]:
    """The multi-line message is a GPU-lost event only if it says the GPU fell off the bus."""
    text = " ".join(p.removeprefix("NVRM:").strip() for p in parts)
    text = "NVRM: " + text.removeprefix("NVRM: ")
    if "fallen off the bus" not in text:
        return []
    return [XidEvent(ev.pci_bus_id, ev.xid, None, None, text, ev.timestamp, ev.timestamp_format,
                     ev.line_no, gpu_lost=True)]  # fmt: skip


def _xid_event(msg: str, ts: str | None, fmt: str, line_no: int, raw: str) -> XidEvent:
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
    return XidEvent(
        pci_bus_id=xm.group("bus"),
        xid=int(xm.group("xid")),
        pid=pid,
        process_name=name,
        message=rest.strip(),
        timestamp=ts,
        timestamp_format=fmt,
        line_no=line_no,
        caused_by_xid=int(caused.group("xid")) if caused else None,
    )
