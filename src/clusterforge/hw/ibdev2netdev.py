"""``ibdev2netdev [-v]`` output (MLNX_OFED / rdma-core helper script)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "ibdev2netdev"

_RE = re.compile(r"^(?P<dev>\S+) port (?P<port>\d+) ==> (?P<netdev>\S+) \((?P<state>Up|Down)\)$")
_VERBOSE_RE = re.compile(
    r"^(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (?P<dev>\S+) \((?P<desc>[^)]*)\) .*?"
    r"port (?P<port>\d+) \((?P<port_state>[A-Z_]+)\) ==> (?P<netdev>\S+) \((?P<state>Up|Down)\)$"
)


@dataclass(frozen=True)
class IbNetdev:
    device: str  # "mlx5_0"
    port: int
    netdev: str  # "ib0", "enp4s0f0np0", "bond0"
    up: bool  # "(Up)" / "(Down)" - the netdev's operational state
    pci_address: str | None = None  # only with -v
    port_state: str | None = None  # only with -v ("ACTIVE", "DOWN")


def parse(text: str) -> list[IbNetdev]:
    """One entry per ``mlx5_0 port 1 ==> ib0 (Up)`` line (``-v`` lines also accepted)."""
    require_text(TOOL, text)
    out = []
    seen: set[tuple[str, int]] = set()
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        m = _RE.match(line) or _VERBOSE_RE.match(line)
        if not m:
            raise ParseError(
                TOOL, "expected '<dev> port <n> ==> <netdev> (Up|Down)'", line_no=line_no, line=raw
            )
        key = (m.group("dev"), int(m.group("port")))
        if key in seen:
            raise ParseError(TOOL, f"{key[0]} port {key[1]} listed twice", line_no=line_no)
        seen.add(key)
        groups = m.groupdict()
        out.append(
            IbNetdev(
                key[0],
                key[1],
                m.group("netdev"),
                m.group("state") == "Up",
                groups.get("pci"),
                groups.get("port_state"),
            )
        )
    return out
