"""`lldpctl` / `lldpcli show neighbors` output: the neighbour each local port sees over LLDP.

Three formats are read: `-f json` (values keyed by interface and chassis name), `-f json0` (every value in a
list of objects, the layout lldpd documents as stable) and the default plain text (`Interface:` blocks
separated by dashed rules, also what SONiC's `show lldp neighbors` prints). `parse` picks by the first
character. A plain-text output cut in its last block raises ParseError; with ``partial=True`` the complete
blocks are returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "lldpctl"


@dataclass(frozen=True)
class Neighbor:
    """One LLDP neighbour heard on a local interface (an interface can hear several)."""

    interface: str  # the local port, e.g. the node's rail netdev
    via: str  # LLDP, CDPv2, ...
    chassis_id_type: str  # mac, local, ip, ifname, ...
    chassis_id: str
    sysname: str
    sysdescr: str
    mgmt_ips: tuple[str, ...]
    port_id_type: str  # ifname, local, mac, ...
    port_id: str
    port_descr: str
    ttl: int | None

    @property
    def port(self) -> str:
        """The neighbour's port name: the port ID when it is a name (ifname/local), else the description."""
        if self.port_id_type in ("ifname", "local", "ifalias") and self.port_id:
            return self.port_id
        return self.port_descr or self.port_id


def parse(text: str, *, partial: bool = False) -> tuple[Neighbor, ...]:
    require_text(TOOL, text)
    if text.lstrip().startswith("{"):
        return parse_json(text)
    return parse_text(text, partial=partial)


# --- JSON (json and json0) ---------------------------------------------------------------------------


def _unwrap(v: Any) -> Any:
    """json0 wraps a scalar as [{"value": x}]; json gives x or {"value": x} (when it has attributes)."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, dict) and set(v) <= {"value", "type", "enabled"} and "value" in v:
        return v["value"]
    return v


def _values(v: Any) -> list[Any]:
    if v is None:
        return []
    items = v if isinstance(v, list) else [v]
    return [_unwrap(i) for i in items]


def _id(v: Any) -> tuple[str, str]:
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, dict):
        return str(v.get("type", "")), str(_unwrap(v.get("value", "")))
    return "", "" if v is None else str(v)


def _one(v: Any) -> str:
    u = _unwrap(v)
    return "" if u is None else str(u)


def _entries(block: Any, label: str) -> list[tuple[str, dict[str, Any]]]:
    """(name, body) pairs from json's {name: body} / [{name: body}] or json0's [{"name": n, ...}]."""
    out: list[tuple[str, dict[str, Any]]] = []
    items = block if isinstance(block, list) else [block]
    for item in items:
        if not isinstance(item, dict):
            raise ParseError(TOOL, f"{label}: expected an object, found {type(item).__name__}")
        if "name" in item and not isinstance(item["name"], dict):
            out.append((_one(item["name"]), item))
        else:
            out.extend((str(k), v) for k, v in item.items() if isinstance(v, dict))
    return out


def _chassis(c: Any) -> tuple[str, dict[str, Any]]:
    """A chassis body and its name: json keys it by name unless it has none; json0 has a "name" list."""
    while isinstance(c, list) and len(c) == 1:
        c = c[0]
    if not isinstance(c, dict):
        raise ParseError(TOOL, "chassis: expected an object")
    if "id" in c or "name" in c:
        return _one(c.get("name", "")), c
    if len(c) == 1:
        name, body = next(iter(c.items()))
        if isinstance(body, dict):
            return str(name), body
    raise ParseError(TOOL, f"chassis: unrecognised layout (keys {sorted(c)[:4]})")


def parse_json(text: str) -> tuple[Neighbor, ...]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(TOOL, f"not valid JSON ({exc.msg})", line_no=exc.lineno) from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise ParseError(TOOL, 'no top-level "lldp" object')
    lldp = doc["lldp"]
    while isinstance(lldp, list) and len(lldp) == 1:
        lldp = lldp[0]
    if not isinstance(lldp, dict):
        raise ParseError(TOOL, '"lldp" is not an object')
    if "interface" not in lldp:
        return ()  # lldpd prints {"lldp": {}} (json) / {"lldp": [{}]} (json0) when no neighbour is known
    out: list[Neighbor] = []
    for name, body in _entries(lldp["interface"], "interface"):
        sysname, ch = _chassis(body.get("chassis", {}))
        port = body.get("port", {})
        while isinstance(port, list) and len(port) == 1:
            port = port[0]
        if not isinstance(port, dict):
            raise ParseError(TOOL, f"interface {name}: port is not an object")
        ctype, cid = _id(ch.get("id"))
        ptype, pid = _id(port.get("id"))
        ttl_s = _one(port.get("ttl", body.get("ttl", "")))
        out.append(
            Neighbor(
                interface=name,
                via=_one(body.get("via", "")),
                chassis_id_type=ctype,
                chassis_id=cid,
                sysname=sysname,
                sysdescr=_one(ch.get("descr", "")),
                mgmt_ips=tuple(str(v) for v in _values(ch.get("mgmt-ip"))),
                port_id_type=ptype,
                port_id=pid,
                port_descr=_one(port.get("descr", "")),
                ttl=int(ttl_s) if ttl_s.isdigit() else None,
            )
        )
    return tuple(out)


# --- plain text ---------------------------------------------------------------------------------------

_RULE = "-" * 20


def parse_text(text: str, *, partial: bool = False) -> tuple[Neighbor, ...]:
    lines = split_lines(text)
    if not any(ln.strip() == "LLDP neighbors:" for ln in lines[:4]):
        raise ParseError(TOOL, 'no "LLDP neighbors:" header (plain-text lldpctl output expected)')
    blocks: list[list[tuple[int, str]]] = []
    for no, line in enumerate(lines, 1):
        if line.startswith("Interface:"):
            blocks.append([])
        if blocks and not line.startswith(_RULE):
            blocks[-1].append((no, line))
    out: list[Neighbor] = []
    for i, block in enumerate(blocks):
        try:
            out.append(_text_block(block))
        except ParseError:
            if partial and i == len(blocks) - 1:
                break
            raise
    return tuple(out)


def _text_block(block: list[tuple[int, str]]) -> Neighbor:
    first_no, first = block[0]
    head = first.removeprefix("Interface:").strip()
    iface, _, rest = head.partition(",")
    via = rest.split("via:", 1)[1].split(",", 1)[0].strip() if "via:" in rest else ""
    fields: dict[str, list[str]] = {}
    for _no, line in block[1:]:
        key, sep, value = line.strip().partition(":")
        if sep and key and not key.startswith(" "):
            fields.setdefault(key.strip(), []).append(value.strip())
    if "ChassisID" not in fields and "SysName" not in fields:
        raise ParseError(TOOL, f"interface {iface.strip()}: block has no chassis", line_no=first_no)
    if "PortID" not in fields:
        raise ParseError(TOOL, f"interface {iface.strip()}: block has no PortID (cut?)", line_no=first_no)
    ctype, _, cid = fields.get("ChassisID", [""])[0].partition(" ")
    ptype, _, pid = fields["PortID"][0].partition(" ")
    ttl = fields.get("TTL", [""])[0]
    return Neighbor(
        interface=iface.strip(),
        via=via,
        chassis_id_type=ctype,
        chassis_id=cid.strip(),
        sysname=fields.get("SysName", [""])[0],
        sysdescr=fields.get("SysDescr", [""])[0],
        mgmt_ips=tuple(fields.get("MgmtIP", [])),
        port_id_type=ptype,
        port_id=pid.strip(),
        port_descr=fields.get("PortDescr", [""])[0],
        ttl=int(ttl) if ttl.isdigit() else None,
    )
