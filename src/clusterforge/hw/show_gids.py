"""``show_gids [dev]`` output (MLNX_OFED script): the RoCE/IB GID table."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "show_gids"

_HEADER = ["DEV", "PORT", "INDEX", "GID", "IPv4", "VER", "DEV"]
_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")
_FOOTER_RE = re.compile(r"^n_gids_found=(?P<n>\d+)$")


@dataclass(frozen=True)
class GidEntry:
    device: str
    port: int
    index: int
    gid: str
    ipv4: str | None  # IPv4-mapped GIDs only
    version: str  # "v1" (RoCE v1 / IB) or "v2" (RoCE v2)
    netdev: str | None  # None for InfiniBand ports

    @property
    def is_link_local(self) -> bool:
        return self.gid.lower().startswith("fe80:")


def parse(text: str) -> list[GidEntry]:
    """Rows are tab-separated as printed, or space-aligned in copies; ``n_gids_found`` closes the table."""
    require_text(TOOL, text)
    lines = [(n, line) for n, line in enumerate(split_lines(text), 1) if line.strip()]
    if (
        len(lines) < 2
        or lines[0][1].split() != _HEADER
        or set(lines[1][1].split()) - {"---", "----", "-----", "------------"}
    ):
        raise ParseError(TOOL, "missing 'DEV PORT INDEX GID IPv4 VER DEV' header and dashes")
    out: list[GidEntry] = []
    footer: int | None = None
    for line_no, raw in lines[2:]:
        if footer is not None:
            raise ParseError(TOOL, "text after n_gids_found", line_no=line_no, line=raw)
        if fm := _FOOTER_RE.match(raw.strip()):
            footer = int(fm.group("n"))
            continue
        tokens = raw.split()
        if (
            len(tokens) < 5
            or not tokens[1].isdigit()
            or not tokens[2].isdigit()
            or not _GID_RE.match(tokens[3])
        ):
            raise ParseError(TOOL, "unrecognised GID row", line_no=line_no, line=raw)
        dev, port, index, gid, rest = tokens[0], int(tokens[1]), int(tokens[2]), tokens[3], tokens[4:]
        ipv4 = None
        if rest and rest[0] not in ("v1", "v2"):
            try:
                ipv4 = str(ipaddress.IPv4Address(rest[0]))
            except ValueError:
                raise ParseError(TOOL, f"IPv4 column {rest[0]!r}", line_no=line_no, line=raw) from None
            rest = rest[1:]
        if not rest or rest[0] not in ("v1", "v2") or len(rest) > 2:
            raise ParseError(TOOL, "expected VER (v1/v2) and optional netdev", line_no=line_no, line=raw)
        out.append(GidEntry(dev, port, index, gid, ipv4, rest[0], rest[1] if len(rest) == 2 else None))
    if footer is None:
        raise ParseError(TOOL, "no n_gids_found footer - output truncated")
    if footer != len(out):
        raise ParseError(TOOL, f"n_gids_found={footer} but {len(out)} rows")
    return out
