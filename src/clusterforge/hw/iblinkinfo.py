"""`iblinkinfo` output: every port of every node with its link state, width, lane speed and peer.

Node headers are ``CA: <description>:`` (port lines then start with the port GUID) and
``Switch: <guid> <description>:``; a port line is ``[<guid>] <lid> <port>[<ext>] ==( <width> <lane speed> Gbps
<state>/ <phys state>)==> <peer lid> <peer port>[<ext>] "<peer description>" ( <note> )`` - a down port has
no width/speed and no peer. Column widths are not relied on (some pastes change the spacing). The note
carries iblinkinfo's own hint on a degraded link ("Could be 4X", "Could be 53.125 Gbps").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "iblinkinfo"

_CA = re.compile(r"^CA:\s+(.*):\s*$")
_SW = re.compile(r"^Switch:\s+(0x[0-9a-fA-F]+)\s+(.*):\s*$")
_PORT = re.compile(
    r"^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(?:(\d+X)\s+([\d.]+)\s+Gbps\s+)?"
    r"([\w]+)/\s*([\w]+)\s*\)==>\s*(?:(\d+)\s+(\d+))?\s*\[[^\]]*\]\s+\"(.*)\"\s+\((.*)\)\s*$"
)


@dataclass(frozen=True)
class Port:
    lid: int
    port: int
    width: str  # "4X"; "" when the port is down
    lane_gbps: float | None  # lane signalling rate as printed (25.78125 for EDR)
    state: str  # Active, Down, Init, Armed
    phys_state: str  # LinkUp, Polling, Disabled, ...
    peer_lid: int | None
    peer_port: int | None
    peer: str  # the peer's node description ("" when down)
    note: str  # iblinkinfo's comment in the final parentheses


@dataclass(frozen=True)
class Node:
    kind: str  # switch | ca
    guid: str  # switches: node GUID; CAs: the first port's GUID
    description: str
    ports: tuple[Port, ...]


def parse(text: str, *, partial: bool = False) -> tuple[Node, ...]:
    require_text(TOOL, text)
    lines = split_lines(text)
    nodes: list[Node] = []
    kind = desc = guid = ""
    ports: list[Port] = []

    def close() -> None:
        if kind:
            if not ports:
                raise ParseError(TOOL, f"node {desc!r} has no port lines")
            nodes.append(Node(kind, guid, desc, tuple(ports)))

    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        ca, sw = _CA.match(line), _SW.match(line)
        if ca or sw:
            close()
            ports = []
            kind, guid, desc = ("ca", "", ca.group(1)) if ca else ("switch", sw.group(1).lower(), sw.group(2))  # type: ignore[union-attr]
            continue
        m = _PORT.match(line)
        if m is None or not kind:
            last = all(not ln.strip() for ln in lines[no:])
            if partial and last:
                break
            raise ParseError(TOOL, "unrecognised line (cut output?)", line_no=no, line=raw)
        pg, lid, port, width, lane, state, phys, plid, pport, peer, note = m.groups()
        if pg and not guid:
            guid = pg.lower()
        ports.append(
            Port(
                int(lid),
                int(port),
                width or "",
                float(lane) if lane else None,
                state,
                phys,
                int(plid) if plid else None,
                int(pport) if pport else None,
                peer,
                note.strip(),
            )
        )
    close()
    if not nodes:
        raise ParseError(TOOL, "no CA:/Switch: blocks")
    return tuple(nodes)
