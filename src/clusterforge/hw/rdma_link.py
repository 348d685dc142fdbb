"""``rdma link [show]`` output (iproute2), including lines wrapped onto a tab-indented continuation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "rdma link"

_HEAD_RE = re.compile(r"^link (?P<dev>[^/\s]+)/(?P<port>\d+)(?: (?P<rest>.*))?$")
_KNOWN = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")
_STATES = frozenset({"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"})
_PHYS = frozenset(
    {
        "NOP",
        "SLEEP",
        "POLLING",
        "DISABLED",
        "PORT_CONFIGURATION_TRAINING",
        "LINK_UP",
        "LINK_ERROR_RECOVERY",
        "PHY_TEST",
    }
)


@dataclass(frozen=True)
class RdmaLink:
    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", ...
    physical_state: str  # "LINK_UP", "POLLING", "DISABLED", ...
    netdev: str | None
    subnet_prefix: str | None  # IB only
    lid: int | None
    sm_lid: int | None
    lmc: int | None
    extra: Mapping[str, str]


def parse(text: str) -> list[RdmaLink]:
    require_text(TOOL, text)
    records: list[tuple[int, str, int, list[str]]] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        if not raw.strip():
            continue
        if raw[:1].isspace():
            if not records:
                raise ParseError(TOOL, "continuation line before any 'link' line", line_no=line_no, line=raw)
            records[-1][3].extend(raw.split())
            continue
        m = _HEAD_RE.match(raw.rstrip())
        if not m:
            raise ParseError(TOOL, "expected 'link <dev>/<port> ...'", line_no=line_no, line=raw)
        records.append((line_no, m.group("dev"), int(m.group("port")), (m.group("rest") or "").split()))
    if not records:
        raise ParseError(TOOL, "no 'link' lines")
    out = []
    for line_no, dev, port, tokens in records:
        if len(tokens) % 2:
            raise ParseError(
                TOOL, f"{dev}/{port}: attributes are not key/value pairs: {tokens}", line_no=line_no
            )
        attrs = dict(zip(tokens[::2], tokens[1::2], strict=True))
        if "state" not in attrs or "physical_state" not in attrs:
            raise ParseError(
                TOOL, f"{dev}/{port} lacks state/physical_state - output truncated", line_no=line_no
            )
        if attrs["state"] not in _STATES or attrs["physical_state"] not in _PHYS:
            raise ParseError(
                TOOL,
                f"{dev}/{port}: unknown state {attrs['state']}/{attrs['physical_state']}",
                line_no=line_no,
            )
        ints = {}
        for key in ("lid", "sm_lid", "lmc"):
            if key in attrs:
                if not attrs[key].isdigit():
                    raise ParseError(TOOL, f"{dev}/{port}: {key} {attrs[key]!r}", line_no=line_no)
                ints[key] = int(attrs[key])
        out.append(
            RdmaLink(
                dev,
                port,
                attrs["state"],
                attrs["physical_state"],
                attrs.get("netdev"),
                attrs.get("subnet_prefix"),
                ints.get("lid"),
                ints.get("sm_lid"),
                ints.get("lmc"),
                {k: v for k, v in attrs.items() if k not in _KNOWN},
            )
        )
    return out
