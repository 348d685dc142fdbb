"""``ibv_devinfo [-d dev] [-v]`` output (libibverbs)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import require_text, split_lines, to_int
from .errors import ParseError

TOOL = "ibv_devinfo"

_HCA_RE = re.compile(r"^hca_id:\s+(?P<hca>\S+)$")
_PORT_RE = re.compile(r"^port:\s+(?P<port>\d+)$")
_KV_RE = re.compile(r"^(?P<key>[A-Za-z_][\w ]*?):(?:\s+(?P<value>.*))?$")
_FLAG_RE = re.compile(r"^[A-Z][A-Z0-9_]*(?: \(\d+\))?$")
_GID_RE = re.compile(r"^GID\[\s*(?P<idx>\d+)\]:\s+(?P<gid>[0-9a-fA-F:.]+)(?:, (?P<type>.+))?$")
_CODED_RE = re.compile(r"^(?P<name>.+?) \((?P<code>\d+)\)$")
_DEV_KEYS = (
    "transport",
    "fw_ver",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "phys_port_cnt",
)
_PORT_KEYS = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer")


@dataclass(frozen=True)
class IbvGid:
    index: int
    gid: str
    type: str | None  # "RoCE v2", "RoCE v1", None for IB


@dataclass(frozen=True)
class IbvPort:
    port: int
    state: str  # "PORT_ACTIVE"
    state_code: int  # 4
    max_mtu: int  # 4096
    active_mtu: int
    sm_lid: int
    port_lid: int
    port_lmc: str
    link_layer: str  # "InfiniBand" / "Ethernet"
    gids: tuple[IbvGid, ...]  # only with -v
    extra: Mapping[str, str]  # every other key (-v adds max_msg_sz, active_speed, phys_state ...)


@dataclass(frozen=True)
class IbvDevice:
    hca_id: str
    transport: str  # "InfiniBand"
    transport_code: int
    fw_ver: str
    node_guid: str
    sys_image_guid: str
    vendor_id: str
    vendor_part_id: int
    hw_ver: str
    board_id: str | None
    phys_port_cnt: int
    ports: tuple[IbvPort, ...]
    extra: Mapping[str, str]


def _coded(value: str, key: str, line_no: int) -> tuple[str, int]:
    m = _CODED_RE.match(value)
    if not m:
        raise ParseError(TOOL, f"{key} is not '<value> (<code>)': {value!r}", line_no=line_no)
    return m.group("name"), int(m.group("code"))


def _port(number: int, kv: dict[str, tuple[int, str]], gids: list[IbvGid], hca: str, line_no: int) -> IbvPort:
    missing = [k for k in _PORT_KEYS if k not in kv]
    if missing:
        raise ParseError(TOOL, f"{hca} port {number} lacks {missing} - output truncated", line_no=line_no)
    state, code = _coded(kv["state"][1], "state", kv["state"][0])
    mtus = {k: _coded(kv[k][1], k, kv[k][0])[0] for k in ("max_mtu", "active_mtu")}
    return IbvPort(
        port=number,
        state=state,
        state_code=code,
        max_mtu=to_int(TOOL, mtus["max_mtu"], "max_mtu", line_no=kv["max_mtu"][0]),
        active_mtu=to_int(TOOL, mtus["active_mtu"], "active_mtu", line_no=kv["active_mtu"][0]),
        sm_lid=to_int(TOOL, kv["sm_lid"][1], "sm_lid", line_no=kv["sm_lid"][0]),
        port_lid=to_int(TOOL, kv["port_lid"][1], "port_lid", line_no=kv["port_lid"][0]),
        port_lmc=kv["port_lmc"][1],
        link_layer=kv["link_layer"][1],
        gids=tuple(gids),
        extra={k: v for k, (_, v) in kv.items() if k not in _PORT_KEYS},
    )


def parse(text: str) -> list[IbvDevice]:
    require_text(TOOL, text)
    if text.strip() == "No IB devices found":
        raise ParseError(TOOL, "the tool reported 'No IB devices found'")
    devices: list[
        tuple[
            str,
            int,
            dict[str, tuple[int, str]],
            list[tuple[int, int, dict[str, tuple[int, str]], list[IbvGid]]],
        ]
    ] = []
    last_key: tuple[dict[str, tuple[int, str]], str] | None = None
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if m := _HCA_RE.match(line):
            if raw[:1].isspace():
                raise ParseError(TOOL, "indented hca_id line", line_no=line_no, line=raw)
            devices.append((m.group("hca"), line_no, {}, []))
            continue
        if not devices or not raw[:1].isspace():
            raise ParseError(TOOL, "unrecognised line (expected 'hca_id:')", line_no=line_no, line=raw)
        _, _, dev_kv, ports = devices[-1]
        if line == "Device ports:":
            continue
        if pm := _PORT_RE.match(line):
            ports.append((int(pm.group("port")), line_no, {}, []))
            continue
        if ports and (gm := _GID_RE.match(line)):
            ports[-1][3].append(IbvGid(int(gm.group("idx")), gm.group("gid"), gm.group("type")))
            continue
        target = ports[-1][2] if ports else dev_kv
        km = _KV_RE.match(line)
        if not km:
            if not (_FLAG_RE.match(line) and last_key and last_key[0] is target):
                raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=raw)
            first_no, value = target[last_key[1]]  # -v prints capability flags one per line
            target[last_key[1]] = (first_no, f"{value} {line}".strip())
            continue
        if km.group("key") in target:
            raise ParseError(TOOL, f"repeated key {km.group('key')!r}", line_no=line_no, line=raw)
        target[km.group("key")] = (line_no, (km.group("value") or "").strip())
        last_key = (target, km.group("key"))
    if not devices:
        raise ParseError(TOOL, "no 'hca_id:' blocks")
    out = []
    for hca, line_no, kv, ports in devices:
        missing = [k for k in _DEV_KEYS if k not in kv]
        if missing:
            raise ParseError(TOOL, f"{hca} lacks {missing} - output truncated", line_no=line_no)
        transport, tcode = _coded(kv["transport"][1], "transport", kv["transport"][0])
        count = to_int(TOOL, kv["phys_port_cnt"][1], "phys_port_cnt", line_no=kv["phys_port_cnt"][0])
        if len(ports) != count:
            raise ParseError(
                TOOL,
                f"{hca}: phys_port_cnt {count} but {len(ports)} port blocks - output truncated",
                line_no=line_no,
            )
        out.append(
            IbvDevice(
                hca_id=hca,
                transport=transport,
                transport_code=tcode,
                fw_ver=kv["fw_ver"][1],
                node_guid=kv["node_guid"][1],
                sys_image_guid=kv["sys_image_guid"][1],
                vendor_id=kv["vendor_id"][1],
                vendor_part_id=to_int(TOOL, kv["vendor_part_id"][1], "vendor_part_id"),
                hw_ver=kv["hw_ver"][1],
                board_id=kv["board_id"][1] if "board_id" in kv else None,
                phys_port_cnt=count,
                ports=tuple(_port(n, pkv, gids, hca, pl) for n, pl, pkv, gids in ports),
                extra={k: v for k, (_, v) in kv.items() if k not in (*_DEV_KEYS, "board_id")},
            )
        )
    return out
