"""SONiC switch read-back: `show interfaces status`, `show queue counters`, `show pfc counters` (tables in
tabulate's "simple" layout: a header, a rule of dash runs, rows) and `mmuconfig -l` / `ecnconfig -l` (one
block per buffer pool / profile: ``Pool: NAME`` or ``Profile: NAME``, a rule, ``key value`` lines, a rule).

Table columns are cut where the rule's dash runs are, so a value with spaces (``QSFP28 or later``) stays one
cell; a row wider than the rule or a cell outside every column raises ParseError. Counters keep SONiC's
thousands commas out (``15,437`` -> 15437); ``N/A`` is None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

_RULE = re.compile(r"^\s*-+(?:\s+-+)*\s*$")


def _spans(rule: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]


def table(text: str, tool: str) -> list[dict[str, str]]:
    """Rows of a tabulate "simple" table as {header: cell}; the header is the line above the first rule."""
    require_text(tool, text)
    lines = split_lines(text)
    at = next((i for i, ln in enumerate(lines) if _RULE.match(ln) and i > 0 and lines[i - 1].strip()), None)
    if at is None:
        raise ParseError(tool, "no header line above a rule of dashes")
    spans = _spans(lines[at])
    # a column's cells may start left of its dashes (right-aligned headers are padded): cut at the gaps
    cuts = [0] + [(spans[i][1] + spans[i + 1][0]) // 2 for i in range(len(spans) - 1)] + [10**6]
    cols = [(cuts[i], cuts[i + 1]) for i in range(len(spans))]
    header = [lines[at - 1][a:b].strip() for a, b in cols]
    if not all(header):
        raise ParseError(tool, "a column without a header", line_no=at, line=lines[at - 1])
    rows: list[dict[str, str]] = []
    for no, line in enumerate(lines[at + 1 :], at + 2):
        if not line.strip():
            continue
        if _RULE.match(line):
            break
        if len(line.rstrip()) > spans[-1][1] + 2:
            raise ParseError(tool, "row wider than the table", line_no=no, line=line)
        cells = [line[a:b].strip() for a, b in cols]
        if not cells[0]:
            raise ParseError(tool, "row without a first cell", line_no=no, line=line)
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _int(cell: str, tool: str) -> int | None:
    c = cell.replace(",", "")
    if c in ("N/A", ""):
        return None
    if not c.isdigit():
        raise ParseError(tool, f"not a counter: {cell!r}")
    return int(c)


# --- show interfaces status ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PortStatus:
    name: str
    lanes: tuple[int, ...]
    speed_gbps: int | None
    mtu: int | None
    fec: str | None  # None when the release prints no FEC column
    alias: str
    vlan: str
    oper: str
    admin: str
    type: str


def _speed(cell: str) -> int | None:
    m = re.fullmatch(r"(\d+)G", cell)
    return int(m.group(1)) if m else None


def parse_interfaces_status(text: str) -> tuple[PortStatus, ...]:
    tool = "show interfaces status"
    out = []
    for r in table(text, tool):
        if "Interface" not in r or "Oper" not in r:
            raise ParseError(tool, f"unexpected columns {sorted(r)}")
        out.append(
            PortStatus(
                name=r["Interface"],
                lanes=tuple(int(x) for x in r.get("Lanes", "").split(",") if x.isdigit()),
                speed_gbps=_speed(r.get("Speed", "")),
                mtu=_int(r.get("MTU", ""), tool),
                fec=r.get("FEC"),
                alias=r.get("Alias", ""),
                vlan=r.get("Vlan", ""),
                oper=r["Oper"],
                admin=r.get("Admin", ""),
                type=r.get("Type", ""),
            )
        )
    return tuple(out)


# --- show queue counters -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueCounters:
    port: str
    queue: str  # UC0..UC7 (unicast), MC8.. (multicast), as SONiC names them
    packets: int | None
    bytes: int | None
    drop_packets: int | None
    drop_bytes: int | None

    @property
    def index(self) -> int:
        digits = re.sub(r"^\D+", "", self.queue)
        return int(digits) if digits.isdigit() else -1

    @property
    def unicast(self) -> bool:
        return self.queue.startswith("UC")


def parse_queue_counters(text: str) -> tuple[QueueCounters, ...]:
    tool = "show queue counters"
    out = []
    for r in table(text, tool):
        try:
            out.append(
                QueueCounters(
                    r["Port"],
                    r["TxQ"],
                    _int(r["Counter/pkts"], tool),
                    _int(r["Counter/bytes"], tool),
                    _int(r["Drop/pkts"], tool),
                    _int(r["Drop/bytes"], tool),
                )
            )
        except KeyError as exc:
            raise ParseError(tool, f"no column {exc}") from None
    return tuple(out)


# --- show pfc counters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PfcCounters:
    port: str
    direction: str  # "Rx" (pause frames received) or "Tx" (sent)
    frames: tuple[int | None, ...]  # per priority 0..7


def parse_pfc_counters(text: str) -> tuple[PfcCounters, ...]:
    """Both tables of `show pfc counters` (Port Rx, Port Tx), or one of them (``| grep Tx -A10``)."""
    tool = "show pfc counters"
    require_text(tool, text)
    out: list[PfcCounters] = []
    lines = split_lines(text)
    starts = [i for i, ln in enumerate(lines) if re.match(r"^\s*Port (Rx|Tx)\s", ln)]
    if not starts:
        raise ParseError(tool, "no 'Port Rx' / 'Port Tx' header")
    for k, s in enumerate(starts):
        block = "\n".join(lines[s : starts[k + 1] if k + 1 < len(starts) else None])
        for r in table(block, tool):
            key = next(h for h in r if h.startswith("Port"))
            direction = key.split()[1]
            try:
                frames = tuple(_int(r[f"PFC{p}"], tool) for p in range(8))
            except KeyError as exc:
                raise ParseError(tool, f"no column {exc}") from None
            out.append(PfcCounters(r[key], direction, frames))
    return tuple(out)


# --- mmuconfig -l / ecnconfig -l -----------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    kind: str  # "Pool" or "Profile"
    name: str
    fields: dict[str, str]


def parse_profiles(text: str, tool: str = "mmuconfig -l") -> tuple[Block, ...]:
    """`mmuconfig -l` (buffer pools and profiles) or `ecnconfig -l` (WRED profiles): every block whole.
    A block cut before its closing rule raises ParseError."""
    require_text(tool, text)
    out: list[Block] = []
    cur: Block | None = None
    rules = 0
    for no, line in enumerate(split_lines(text), 1):
        s = line.strip()
        if not s:
            continue
        m = re.fullmatch(r"(Pool|Profile):\s*(\S+)", s)
        if m:
            if cur is not None and rules < 2:
                raise ParseError(tool, f"{cur.kind} {cur.name}: no closing rule", line_no=no, line=line)
            cur, rules = Block(m.group(1), m.group(2), {}), 0
            out.append(cur)
            continue
        if cur is None:
            raise ParseError(tool, "a line before any 'Pool:' / 'Profile:' header", line_no=no, line=line)
        if _RULE.match(line):
            rules += 1
            continue
        key, _, value = s.partition(" ")
        if rules != 1 or not value.strip():
            raise ParseError(tool, f"{cur.kind} {cur.name}: unexpected line", line_no=no, line=line)
        cur.fields[key] = value.strip()
    if not out:
        raise ParseError(tool, "no 'Pool:' / 'Profile:' block")
    if rules < 2:
        raise ParseError(tool, f"{out[-1].kind} {out[-1].name}: cut before its closing rule")
    return tuple(out)


def profiles(blocks: tuple[Block, ...], kind: str = "Profile") -> dict[str, dict[str, str]]:
    return {b.name: b.fields for b in blocks if b.kind == kind}
