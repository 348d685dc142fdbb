"""`ibnetdiscover` (topology file) and `ibnetdiscover -p` (ports report): the InfiniBand subnet as found.

Topology file: a block per node (`vendid=`/`devid=`/`sysimgguid=`/`switchguid=` or `caguid=` lines, then
``Switch|Ca|Rt <ports> "S-<guid>" # "<node description>" ...`` and one line per connected port
``[<port>](<port guid>)? "<S|H|R>-<remote guid>"[<remote port>](...)? # ... <width>x<speed>``), blocks
separated by blank lines. Every physical link appears in both end nodes' blocks; `links` holds it once.

A cut output (a port line broken off, or links to node blocks that never come) raises ParseError; with
``partial=True`` the complete part is returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "ibnetdiscover"

_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*#\s*"(.*)"(.*)$')
_PORT = re.compile(
    r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*#(.*)$'
)
_RATE = re.compile(r"\b(\d+)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?\?\?)(?=\s|$)")
_LID = re.compile(r"\blid (\d+)")
KIND = {"Switch": "switch", "Ca": "ca", "Rt": "router"}


@dataclass(frozen=True)
class Node:
    kind: str  # switch | ca | router
    guid: str  # node GUID, "0x" + 16 lowercase hex digits
    description: str  # NodeDescription ("gpu-0001 mlx5_0", "MF0;leaf-1:MQM9700/U1")
    ports: int
    lid: int | None  # switches: the switch LID; CAs: the LID of the first listed port
    devid: str


@dataclass(frozen=True)
class Link:
    """One cable, its ends ordered as first seen. `width` like "4x"; `speed` like "NDR" ("???" unknown)."""

    a_guid: str
    a_port: int
    b_guid: str
    b_port: int
    width: str
    speed: str


@dataclass(frozen=True)
class Topology:
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]

    def by_guid(self) -> dict[str, Node]:
        return {n.guid: n for n in self.nodes}


def _guid(hexdigits: str) -> str:
    return "0x" + hexdigits.lower().removeprefix("0x").zfill(16)


def parse(text: str, *, partial: bool = False) -> Topology:
    require_text(TOOL, text)
    lines = split_lines(text)
    nodes: list[Node] = []
    links: dict[tuple[tuple[str, int], tuple[str, int]], Link] = {}
    referenced: dict[str, int] = {}
    devid = ""
    cur: str | None = None
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if not line:
                cur = None
            continue
        if "=" in line and not line.startswith("[") and line.split("=", 1)[0].isalpha():
            if line.startswith("devid="):
                devid = line.split("=", 1)[1]
            continue
        m = _NODE.match(line)
        if m:
            kind, nports, _t, g, desc, tail = m.groups()
            lid = _LID.search(tail)
            cur = _guid(g)
            nodes.append(Node(KIND[kind], cur, desc, int(nports), int(lid.group(1)) if lid else None, devid))
            continue
        p = _PORT.match(line)
        if p is None or cur is None:
            if partial:
                break
            raise ParseError(TOOL, "unrecognised line (cut output?)", line_no=no, line=raw)
        port, _pg, _t, rg, rport, _rpg, comment = p.groups()
        rate = _RATE.search(comment)
        if rate is None:
            if partial:
                break
            raise ParseError(TOOL, "port line without a link rate", line_no=no, line=raw)
        if cur not in (n.guid for n in nodes[-1:]):
            raise ParseError(TOOL, "port line outside a node block", line_no=no, line=raw)
        if nodes[-1].kind == "ca" and nodes[-1].lid is None:
            lid = _LID.search(comment)
            if lid:
                nodes[-1] = Node("ca", cur, nodes[-1].description, nodes[-1].ports, int(lid.group(1)), devid)
        a, b = (cur, int(port)), (_guid(rg), int(rport))
        key = (a, b) if a <= b else (b, a)
        if key not in links:
            links[key] = Link(a[0], a[1], b[0], b[1], rate.group(1) + "x", rate.group(2))
        referenced[b[0]] = no
    known = {n.guid for n in nodes}
    missing = sorted(set(referenced) - known, key=referenced.__getitem__)
    if missing and not partial:
        g = missing[0]
        raise ParseError(
            TOOL,
            f"{len(missing)} linked node(s) have no block, e.g. {g} (cut output?)",
            line_no=referenced[g],
        )
    if not nodes:
        raise ParseError(TOOL, "no node blocks")
    keep = [
        lk for lk in links.values() if not (partial and (lk.a_guid not in known or lk.b_guid not in known))
    ]
    return Topology(tuple(nodes), tuple(keep))


# --- ibnetdiscover -p (ports report) ------------------------------------------------------------------

_P_END = r"(SW|CA|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)"
_P_LINE = re.compile(
    rf"^{_P_END}\s+(\d+x)\s+(\S+)(?:\s+-\s+{_P_END}\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)|\s+'(.*)')\s*$"
)


@dataclass(frozen=True)
class PortEnd:
    kind: str  # switch | ca | router
    lid: int
    port: int
    guid: str  # port GUID as printed
    name: str  # node description


@dataclass(frozen=True)
class PortRecord:
    """One port line: the local end, its width/speed, and the peer when the port is connected."""

    local: PortEnd
    width: str  # "4x"
    speed: str  # "EDR", "???" when the port is down
    peer: PortEnd | None


_PKIND = {"SW": "switch", "CA": "ca", "RT": "router"}


def parse_ports(text: str, *, partial: bool = False) -> tuple[PortRecord, ...]:
    require_text(TOOL, text)
    out: list[PortRecord] = []
    lines = split_lines(text)
    for no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        m = _P_LINE.match(raw.strip())
        if m is None:
            if partial and all(not ln.strip() for ln in lines[no:]):
                break
            raise ParseError(f"{TOOL} -p", "unrecognised ports-report line", line_no=no, line=raw)
        k, lid, port, guid, width, speed, pk, plid, pport, pguid, lname, pname, solo = m.groups()
        local = PortEnd(_PKIND[k], int(lid), int(port), guid.lower(), lname if pk else solo)
        peer = PortEnd(_PKIND[pk], int(plid), int(pport), pguid.lower(), pname) if pk else None
        out.append(PortRecord(local, width, speed, peer))
    if not out:
        raise ParseError(f"{TOOL} -p", "no port lines")
    return tuple(out)
