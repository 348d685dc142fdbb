"""infiniband-diags tools that print MAD attributes as dot-padded ``Key:......value`` lines under a
``# <attribute>: Lid <lid> port <port> ...`` header: `smpquery nodeinfo`, `ibportstate` (PortInfo, shown
before and after a set) and `perfquery -x` / `-E` (port counters, one block per port).

Every block must have its header and at least one field; a cut last field line raises ParseError (with
``partial=True`` the block is kept without it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._common import require_text, split_lines
from .errors import ParseError

_HEAD = re.compile(r"^#\s*(.+?):\s*(?:Lid|lid)\s+(\d+)(?:\s+port\s+(\d+))?(.*)$")
_FIELD = re.compile(r"^([A-Za-z][\w ]*?):\.*(.*)$")


@dataclass(frozen=True)
class Block:
    title: str  # "Node info", "Port info", "Port extended counters", "PortRcvErrorDetails counters"
    lid: int
    port: int | None
    fields: dict[str, str] = field(hash=False)
    label: str = ""  # a preceding plain line such as "Initial CA/RT PortInfo:" (ibportstate)

    def int(self, key: str) -> int:
        value = self.fields[key]
        return int(value, 16) if value.lower().startswith("0x") else int(value)


def parse_blocks(text: str, tool: str, *, partial: bool = False) -> tuple[Block, ...]:
    require_text(tool, text)
    blocks: list[Block] = []
    label = ""
    fields: dict[str, str] | None = None
    lines = split_lines(text)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        h = _HEAD.match(line)
        if h:
            fields = {}
            blocks.append(
                Block(h.group(1), int(h.group(2)), int(h.group(3)) if h.group(3) else None, fields, label)
            )
            continue
        f = _FIELD.match(line)
        if f and fields is not None and ":." in line:
            fields[f.group(1)] = f.group(2).strip()
            continue
        if line.endswith(":") and ":" not in line[:-1]:
            label = line[:-1]
            fields = None
            continue
        if partial and all(not ln.strip() for ln in lines[no:]):
            break
        raise ParseError(tool, "unrecognised line (cut output?)", line_no=no, line=raw)
    if not blocks:
        raise ParseError(tool, "no '# ... Lid N' block header")
    empty = [b for b in blocks if not b.fields]
    if empty:
        raise ParseError(tool, f"block {empty[0].title!r} (lid {empty[0].lid}) has no fields")
    return tuple(blocks)


def parse_fields(text: str, tool: str) -> dict[str, str]:
    """Every dot-padded ``Key:......value`` line of an output, headers (``# ...``) skipped: what
    `smpquery -D nodedesc|portinfo <path>` prints (a directed-route header has no LID to match on).
    No field at all raises ParseError."""
    require_text(tool, text)
    out: dict[str, str] = {}
    for raw in split_lines(text):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        f = _FIELD.match(line)
        if f and ":." in line:
            out[f.group(1)] = f.group(2).strip()
    if not out:
        raise ParseError(tool, "no 'Key:....value' field")
    return out


@dataclass(frozen=True)
class QueryFailed:
    """An infiniband-diags query whose MAD got no answer (rdma-core ibdiag_common.c ibexit, exit 255):
    ``<tool>: iberror: failed: operation <op>: <what> query failed``, after libibmad's ``ibwarn: [pid]
    mad_rpc: _do_madrpc failed; dport (<route>)`` when stderr is shown with it."""

    tool: str
    op: str  # as typed: "NodeInfo", "nodedesc"
    reason: str  # "node info query failed"
    route: str  # "Lid 4", "DR path slid 65535; dlid 65535; 0,1"; "" when stderr was not kept


_IBERROR = re.compile(r"^(\S+): iberror: failed: operation (\S+): (.+ query failed)\s*$")
_MADRPC = re.compile(r"^ibwarn: \[\d+\] mad_rpc: _do_madrpc failed; dport \((.*)\)\s*$")


def parse_query_failed(text: str) -> QueryFailed:
    """The unanswered query of a failed `smpquery`/`perfquery`-style run; ParseError for any other output
    (a tool that could not open its port or was misused did not query anything)."""
    require_text("iberror", text)
    route = ""
    for raw in split_lines(text):
        w = _MADRPC.match(raw.strip())
        if w:
            route = w.group(1)
            continue
        m = _IBERROR.match(raw.strip())
        if m:
            return QueryFailed(m.group(1), m.group(2), m.group(3), route)
    raise ParseError("iberror", "no 'iberror: failed: operation <op>: ... query failed' line")


# --- smpquery nodeinfo ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeInfo:
    lid: int
    node_type: str  # "Channel Adapter", "Switch", "Router"
    num_ports: int
    system_guid: str
    node_guid: str
    port_guid: str
    local_port: int
    device_id: str
    vendor_id: str


def parse_nodeinfo(text: str, *, partial: bool = False) -> NodeInfo:
    b = parse_blocks(text, "smpquery nodeinfo", partial=partial)[0]
    if b.title.lower() != "node info":
        raise ParseError("smpquery nodeinfo", f"expected a 'Node info' block, found {b.title!r}")
    try:
        return NodeInfo(
            b.lid,
            b.fields["NodeType"],
            b.int("NumPorts"),
            b.fields["SystemGuid"].lower(),
            b.fields["Guid"].lower(),
            b.fields["PortGuid"].lower(),
            b.int("LocalPort"),
            b.fields["DevId"].lower(),
            b.fields["VendorId"].lower(),
        )
    except KeyError as exc:
        raise ParseError("smpquery nodeinfo", f"missing field {exc.args[0]}") from None


# --- ibportstate / smpquery portinfo ------------------------------------------------------------------

#: PortInfo LinkSpeedActive / LinkSpeedExtActive values -> InfiniBand speed name
LANE_NAMES = {
    "2.5 Gbps": "SDR", "5.0 Gbps": "DDR", "10.0 Gbps": "QDR", "14.0625 Gbps": "FDR",
    "25.78125 Gbps": "EDR", "53.125 Gbps": "HDR", "106.25 Gbps": "NDR", "212.5 Gbps": "XDR",
}  # fmt: skip


@dataclass(frozen=True)
class PortInfo:
    label: str  # ibportstate: "Initial CA/RT PortInfo" / "After PortInfo set"
    lid: int
    port: int
    link_state: str
    phys_state: str
    width_active: str  # "4X"
    speed_active: str  # as printed: "10.0 Gbps" or "Extended speed"
    speed_ext_active: str  # "14.0625 Gbps", "0" / "" when none

    @property
    def speed_name(self) -> str:
        """The active lane speed as IB names it (the extended speed when one is active), "" if unknown."""
        for value in (self.speed_ext_active, self.speed_active):
            if value in LANE_NAMES:
                return LANE_NAMES[value]
        return ""


def parse_portinfo(text: str, *, partial: bool = False) -> tuple[PortInfo, ...]:
    out = []
    for b in parse_blocks(text, "ibportstate", partial=partial):
        if b.title.lower() != "port info":
            continue  # "MLNX ext Port info" and others
        f = b.fields
        try:
            out.append(
                PortInfo(
                    b.label,
                    b.lid,
                    b.port or 0,
                    f["LinkState"],
                    f["PhysLinkState"],
                    f["LinkWidthActive"],
                    f["LinkSpeedActive"],
                    f.get("LinkSpeedExtActive", ""),
                )
            )
        except KeyError as exc:
            raise ParseError("ibportstate", f"Port info of lid {b.lid} lacks {exc.args[0]}") from None
    if not out:
        raise ParseError("ibportstate", "no 'Port info' block")
    return tuple(out)


# --- perfquery -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PortCounters:
    kind: str  # the block title: "Port extended counters", "Port counters", "PortRcvErrorDetails counters"
    lid: int
    port: int | None
    counters: dict[str, int] = field(hash=False)  # perfquery's names, e.g. SymbolErrorCounter


def parse_perfquery(text: str, *, partial: bool = False) -> tuple[PortCounters, ...]:
    out = []
    for b in parse_blocks(text, "perfquery", partial=partial):
        if "counters" not in b.title.lower():
            raise ParseError("perfquery", f"unexpected block {b.title!r}")
        values: dict[str, int] = {}
        for k, v in b.fields.items():
            if k in ("PortSelect", "CounterSelect", "CounterSelect2"):
                continue
            try:
                values[k] = int(v, 16) if v.lower().startswith("0x") else int(v)
            except ValueError:
                raise ParseError("perfquery", f"{k} is not a number: {v!r}") from None
        out.append(PortCounters(b.title, b.lid, b.port, values))
    return tuple(out)
