"""``ofed_info -s``: the one-line version of the installed NVIDIA (Mellanox) OFED stack.

MLNX_OFED prints ``MLNX_OFED_LINUX-23.10-1.1.9.0:``; DOCA-OFED (DOCA host ``doca-ofed`` profile) prints
``OFED-internal-25.10-1.7.1:``. Both end with a colon.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "ofed_info -s"
_LINE_RE = re.compile(
    r"^(?P<flavour>MLNX_OFED_LINUX|OFED-internal|OFED)-(?P<version>\d+\.\d+-[0-9][0-9.]*):?$"
)


@dataclass(frozen=True)
class OfedInfo:
    flavour: str  # "MLNX_OFED_LINUX" | "OFED-internal" | "OFED"
    version: str  # "23.10-1.1.9.0"

    @property
    def release(self) -> str:
        """The YY.MM release: ``23.10-1.1.9.0`` → ``23.10``."""
        return self.version.split("-", 1)[0]

    def matches(self, pin: str) -> bool:
        """The pin names this version: the whole version, or a leading part ending at a ``-``/``.``
        boundary (``23.10`` and ``23.10-1.1`` accept ``23.10-1.1.9.0``; ``23.1`` does not)."""
        return self.version == pin or self.version.startswith((pin + "-", pin + "."))


def parse(text: str) -> OfedInfo:
    require_text(TOOL, text)
    lines = [ln.strip() for ln in split_lines(text) if ln.strip()]
    if len(lines) != 1:
        raise ParseError(TOOL, f"expected one line, got {len(lines)}")
    m = _LINE_RE.match(lines[0])
    if not m:
        raise ParseError(TOOL, "not an OFED version line", line=lines[0])
    return OfedInfo(m.group("flavour"), m.group("version").rstrip("."))
