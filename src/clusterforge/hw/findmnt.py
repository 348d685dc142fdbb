"""Mounted filesystems: ``findmnt --json`` (util-linux) and the lines of ``mount`` / ``/proc/mounts``.

``findmnt --json``: ``{"filesystems": [{...}]}``, one object per mount with the requested columns as
lowercase keys (``source``, ``target``, ``fstype``, ``options``; ``--df`` adds ``size``, ``used``, ``avail``,
``use%``). Without ``--list`` submounts nest under ``children``. Sizes are JSON numbers or numeric strings
with ``--bytes``, human strings (``11.6T``, powers of 1024) without it; a bind mount's source carries the
sub-path in brackets (``/dev/mapper/vg-data[/kubelet]``). ``mount`` prints ``SOURCE on TARGET type FSTYPE
(OPTIONS)``; ``/proc/mounts`` ``SOURCE TARGET FSTYPE OPTIONS 0 0`` with octal escapes (``\\040``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._common import load_json, split_lines, to_bytes
from .errors import ParseError

TOOL = "findmnt"
_MOUNT_LINE = re.compile(r"^(\S+) on (\S+) type (\S+) \(([^)]*)\)$")
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    target: str
    source: str
    fstype: str
    options: tuple[str, ...]
    size_bytes: int | None = None
    avail_bytes: int | None = None
    used_bytes: int | None = None

    def option(self, key: str) -> str | None:
        """The value of ``key=value`` (``""`` for a bare flag present), None when absent."""
        for o in self.options:
            k, sep, v = o.partition("=")
            if k == key:
                return v if sep else ""
        return None


def _walk(items: Any, out: list[Mount]) -> None:
    if not isinstance(items, list):
        raise ParseError(TOOL, "'filesystems' / 'children' is not a list")
    for fs in items:
        if not isinstance(fs, dict) or not isinstance(fs.get("target"), str):
            raise ParseError(TOOL, f"a filesystem without a target: {fs!r}"[:200])
        opts = fs.get("options")
        out.append(
            Mount(
                fs["target"],
                str(fs.get("source") or ""),
                str(fs.get("fstype") or ""),
                tuple(opts.split(",")) if isinstance(opts, str) and opts else (),
                to_bytes(TOOL, fs.get("size"), "size", human=True),
                to_bytes(TOOL, fs.get("avail"), "avail", human=True),
                to_bytes(TOOL, fs.get("used"), "used", human=True),
            )
        )
        if "children" in fs:
            _walk(fs["children"], out)


def parse_json(text: str) -> list[Mount]:
    """``findmnt --json [...]``: every mount, submounts flattened in tree order."""
    doc = load_json(TOOL, text, dict, "run with --json")
    if "filesystems" not in doc:
        raise ParseError(TOOL, "expected an object with 'filesystems'")
    out: list[Mount] = []
    _walk(doc["filesystems"], out)
    return out


def parse_mount_lines(text: str) -> list[Mount]:
    """``mount`` output lines (``SOURCE on TARGET type FSTYPE (OPTIONS)``); empty output is no mount."""
    out = []
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        m = _MOUNT_LINE.match(line.strip())
        if not m:
            raise ParseError("mount", "not a `mount` line", line_no=n, line=line)
        out.append(Mount(m.group(2), m.group(1), m.group(3), tuple(m.group(4).split(","))))
    return out


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_proc_mounts(text: str) -> list[Mount]:
    """``/proc/mounts`` (``/proc/self/mounts``): six fields per line, octal escapes decoded."""
    out = []
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        f = line.split()
        if len(f) != 6:
            raise ParseError("mounts", "expected 6 fields", line_no=n, line=line)
        out.append(Mount(_unescape(f[1]), _unescape(f[0]), f[2], tuple(f[3].split(","))))
    return out
