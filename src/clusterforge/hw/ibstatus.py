"""``ibstatus`` output (the shell wrapper around sysfs in infiniband-diags)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines, to_float
from .errors import ParseError

TOOL = "ibstatus"

_HEAD_RE = re.compile(r"^Infiniband device '(?P<dev>[^']+)' port (?P<port>\d+) status:$")
_KV_RE = re.compile(
    r"^(?P<key>default gid|base lid|sm lid|state|phys state|rate|link_layer):\s+(?P<value>.+)$"
)
_CODE_RE = re.compile(r"^(?P<code>\d+): (?P<name>\S+)$")
_RATE_RE = re.compile(r"^(?P<gbps>\d+(?:\.\d+)?) Gb/sec(?: \((?P<desc>[^)]*)\))?$")


@dataclass(frozen=True)
class IbStatusPort:
    device: str
    port: int
    default_gid: str | None  # None when printed as "unknown"
    base_lid: int
    sm_lid: int
    state: str  # "ACTIVE"
    state_code: int  # 4
    phys_state: str  # "LinkUp"
    phys_state_code: int  # 5
    rate_gbps: float
    rate_desc: str | None  # "4X HDR"
    link_layer: str


def _coded(value: str, what: str, line_no: int) -> tuple[int, str]:
    m = _CODE_RE.match(value)
    if not m:
        raise ParseError(TOOL, f"{what} is not '<code>: <name>': {value!r}", line_no=line_no)
    return int(m.group("code")), m.group("name")


def parse(text: str) -> list[IbStatusPort]:
    require_text(TOOL, text)
    blocks: list[tuple[str, int, int, dict[str, tuple[int, str]]]] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if m := _HEAD_RE.match(line):
            blocks.append((m.group("dev"), int(m.group("port")), line_no, {}))
            continue
        km = _KV_RE.match(line)
        if not blocks or not km or km.group("key") in blocks[-1][3]:
            raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=raw)
        blocks[-1][3][km.group("key")] = (line_no, km.group("value").strip())
    if not blocks:
        raise ParseError(TOOL, "no \"Infiniband device '<dev>' port N status:\" blocks")
    ports = []
    for dev, port, line_no, kv in blocks:
        missing = [
            k
            for k in ("default gid", "base lid", "sm lid", "state", "phys state", "rate", "link_layer")
            if k not in kv
        ]
        if missing:
            raise ParseError(TOOL, f"{dev} port {port} lacks {missing} - output truncated", line_no=line_no)
        state_code, state = _coded(kv["state"][1], "state", kv["state"][0])
        phys_code, phys = _coded(kv["phys state"][1], "phys state", kv["phys state"][0])
        rate = _RATE_RE.match(kv["rate"][1])
        if not rate:
            raise ParseError(TOOL, f"rate {kv['rate'][1]!r}", line_no=kv["rate"][0])
        gid = kv["default gid"][1]
        try:
            base_lid, sm_lid = int(kv["base lid"][1], 16), int(kv["sm lid"][1], 16)
        except ValueError:
            raise ParseError(TOOL, f"{dev} port {port}: lid is not hexadecimal", line_no=line_no) from None
        ports.append(
            IbStatusPort(
                device=dev,
                port=port,
                default_gid=None if gid == "unknown" else gid,
                base_lid=base_lid,
                sm_lid=sm_lid,
                state=state,
                state_code=state_code,
                phys_state=phys,
                phys_state_code=phys_code,
                rate_gbps=to_float(TOOL, rate.group("gbps"), "rate"),
                rate_desc=rate.group("desc"),
                link_layer=kv["link_layer"][1],
            )
        )
    return ports
