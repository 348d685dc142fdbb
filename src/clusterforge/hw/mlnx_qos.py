"""``mlnx_qos -i <netdev>`` output (MLNX_OFED QoS tool): DCBX, trust, dscp2prio, PFC, buffers, ETS."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import is_elision, require_text, split_lines
from .errors import ParseError

TOOL = "mlnx_qos"

_DSCP_RE = re.compile(r"^prio:(?P<prio>\d) dscp:(?P<dscp>(?:\d{2},)+)$")
_BUFFER_RE = re.compile(
    r"^Receive buffer size \(bytes\): (?P<sizes>(?:\d+,)+)(?:max_buffer_size|total_size)=(?P<max>\d+)$"
)
_TC_RE = re.compile(r"^tc: (?P<tc>\d) ratelimit: (?P<rl>[^,]+), tsa: (?P<tsa>\w+)(?:, bw: (?P<bw>\d+)%)?$")
_TC_PRIO_RE = re.compile(r"^priority:\s+(?P<prio>\d)$")
_PFC_ROW_RE = re.compile(r"^(?P<name>priority|enabled|buffer)((?:\s+\d+){8})$")


@dataclass(frozen=True)
class QosTc:
    tc: int
    ratelimit: str  # "unlimited" or a rate
    tsa: str  # "ets", "strict", "vendor"
    bw_percent: int | None  # ETS share, absent for strict/vendor
    priorities: tuple[int, ...]


@dataclass(frozen=True)
class MlnxQos:
    dcbx_mode: str  # "OS controlled" / "Firmware controlled"
    trust_state: str  # "dscp" / "pcp"
    dscp2prio: Mapping[int, tuple[int, ...]]  # priority -> DSCP values (only with trust dscp)
    receive_buffer_sizes: tuple[int, ...] | None
    max_buffer_size: int | None
    cable_len: int | None
    pfc_enabled: tuple[bool, ...] | None  # 8 entries, index = priority
    pfc_buffer: tuple[int, ...] | None  # receive buffer index per priority
    tcs: tuple[QosTc, ...]

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        return tuple(i for i, on in enumerate(self.pfc_enabled or ()) if on)

    def prio_of_dscp(self, dscp: int) -> int:
        for prio, values in self.dscp2prio.items():
            if dscp in values:
                return prio
        raise KeyError(dscp)


def parse(text: str, *, partial: bool = False) -> MlnxQos:
    """Parse ``mlnx_qos`` output. The PFC table and at least one ``tc:`` entry are required unless
    ``partial=True`` (an author's excerpt that stops after the dscp2prio map)."""
    require_text(TOOL, text)
    top: dict[str, str] = {}
    dscp: dict[int, tuple[int, ...]] = {}
    pfc: dict[str, tuple[int, ...]] = {}
    tcs: list[tuple[re.Match[str], list[int]]] = []
    buffers: tuple[int, ...] | None = None
    max_buffer: int | None = None
    section = ""
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if is_elision(line) and partial:
            continue
        if m := _DSCP_RE.match(line):
            if section != "dscp2prio" or int(m.group("prio")) in dscp:
                raise ParseError(TOOL, "dscp2prio line out of place", line_no=line_no, line=raw)
            dscp[int(m.group("prio"))] = tuple(int(d) for d in m.group("dscp").rstrip(",").split(","))
        elif m := _PFC_ROW_RE.match(line):
            if section != "pfc" or m.group("name") in pfc:
                raise ParseError(TOOL, "PFC row out of place", line_no=line_no, line=raw)
            pfc[m.group("name")] = tuple(int(v) for v in m.group(2).split())
        elif m := _TC_RE.match(line):
            section = "tc"
            tcs.append((m, []))
        elif m := _TC_PRIO_RE.match(line):
            if section != "tc":
                raise ParseError(TOOL, "tc priority line outside a tc entry", line_no=line_no, line=raw)
            tcs[-1][1].append(int(m.group("prio")))
        elif m := _BUFFER_RE.match(line):
            buffers = tuple(int(v) for v in m.group("sizes").rstrip(",").split(","))
            max_buffer = int(m.group("max"))
        elif line == "dscp2prio mapping:":
            section = "dscp2prio"
        elif line == "PFC configuration:":
            section = "pfc"
        elif ":" in line and not raw[:1].isspace():
            key, _, value = line.partition(":")
            if key not in ("DCBX mode", "Priority trust state", "Cable len", "default priority"):
                raise ParseError(TOOL, f"unrecognised setting {key!r}", line_no=line_no, line=raw)
            top[key] = value.strip()
            section = key
        else:
            raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=raw)
    for key in ("DCBX mode", "Priority trust state"):
        if key not in top:
            raise ParseError(TOOL, f"missing {key!r} line")
    if top["Priority trust state"] == "dscp" and sorted(dscp) != list(range(8)):
        raise ParseError(TOOL, "trust state dscp but dscp2prio map incomplete - output truncated")
    if not partial:
        if not {"priority", "enabled"} <= set(pfc) or pfc["priority"] != tuple(range(8)):
            raise ParseError(TOOL, "PFC configuration table missing or incomplete - output truncated")
        if not tcs:
            raise ParseError(TOOL, "no 'tc:' entries - output truncated")
    cable = top.get("Cable len")
    return MlnxQos(
        dcbx_mode=top["DCBX mode"],
        trust_state=top["Priority trust state"],
        dscp2prio=dscp,
        receive_buffer_sizes=buffers,
        max_buffer_size=max_buffer,
        cable_len=int(cable) if cable and cable.isdigit() else None,
        pfc_enabled=tuple(bool(v) for v in pfc["enabled"]) if "enabled" in pfc else None,
        pfc_buffer=pfc.get("buffer"),
        tcs=tuple(
            QosTc(
                int(m.group("tc")),
                m.group("rl").strip(),
                m.group("tsa"),
                int(m.group("bw")) if m.group("bw") else None,
                tuple(prios),
            )
            for m, prios in tcs
        ),
    )
