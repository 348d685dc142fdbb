"""``lsblk --json`` (util-linux): block devices as a tree.

``{"blockdevices": [{...}]}``, one object per device with the requested columns as lowercase keys
(``name``, ``type``, ``size``, ``fstype``, ``mountpoint``; util-linux 2.37+ may give ``mountpoints``, a list)
and the devices built on it under ``children`` (partitions, md arrays, LVM volumes; one child can appear
under several parents). ``--paths`` prints names as /dev paths; ``--bytes`` sizes as numbers (older
versions: numeric strings). Missing values are JSON null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._common import load_json, to_bytes
from .errors import ParseError

TOOL = "lsblk"


@dataclass(frozen=True)
class BlockDev:
    name: str
    type: str
    fstype: str | None
    mountpoints: tuple[str, ...]
    size_bytes: int | None
    children: tuple[BlockDev, ...]

    def walk(self) -> list[BlockDev]:
        """This device and everything built on it, depth first."""
        out = [self]
        for c in self.children:
            out += c.walk()
        return out


def _dev(d: Any) -> BlockDev:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise ParseError(TOOL, f"a block device without a name: {d!r}"[:200])
    name = d["name"]
    if "mountpoints" in d:
        raw = d["mountpoints"]
        mps = tuple(m for m in raw if isinstance(m, str)) if isinstance(raw, list) else ()
    else:
        mps = (d["mountpoint"],) if isinstance(d.get("mountpoint"), str) else ()
    kids = d.get("children", [])
    if not isinstance(kids, list):
        raise ParseError(TOOL, f"{name}: 'children' is not a list")
    fstype = d.get("fstype")
    return BlockDev(
        name,
        str(d.get("type") or ""),
        fstype if isinstance(fstype, str) else None,
        mps,
        to_bytes(TOOL, d.get("size"), f"{name}: size", human=False),
        tuple(_dev(c) for c in kids),
    )


def parse(text: str) -> list[BlockDev]:
    """The top-level devices of ``lsblk --json [--paths] [--bytes] ...``, each with its children."""
    doc = load_json(TOOL, text, dict, "run with --json")
    if not isinstance(doc.get("blockdevices"), list):
        raise ParseError(TOOL, "expected an object with a 'blockdevices' list")
    return [_dev(d) for d in doc["blockdevices"]]
