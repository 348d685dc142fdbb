"""The digest of what a site.yml run applies besides the plan: the playbooks and roles it runs and the
inventory it reads (hosts.yml, group_vars/, host_vars/, files/).

A provision keeps it with each node's applied state (`clusterforge.run.managed.applied_state`); a node
whose applied state was made with other roles or another inventory is not compared by the fast read
(drift runs the check; provision runs site.yml on it): its last provision says nothing about what these
roles would do.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clusterforge import assets

#: the parts of an inventory folder that Ansible reads (plan.json, cables.csv, pictures: not)
INVENTORY_PARTS = ("hosts.yml", "group_vars", "host_vars", "files")
_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every regular file under `root` (links followed), by its path relative to `root`, sorted."""
    if root.is_file():
        yield root.name, root
        return
    found = []
    for top, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in names:
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(top) / name
            if path.is_file():
                found.append((path.relative_to(root).as_posix(), path))
    yield from sorted(found)


def _update(h: Any, label: str, root: Path) -> None:
    for rel, path in _files(root):
        data = path.read_bytes()
        h.update(f"{label}/{rel}\0{len(data)}\0".encode())
        h.update(data)


def inputs_digest(inventory: Path, playbooks: Path | None = None) -> str:
    """sha256 over the playbooks folder (`assets.playbooks()` unless given) and the inventory's parts
    Ansible reads, file by file (path, size, content): the same files always give the same digest."""
    h = hashlib.sha256(b"clusterforge site.yml inputs 1\0")
    _update(h, "playbooks", playbooks or assets.playbooks())
    for part in INVENTORY_PARTS:
        path = inventory / part
        if path.exists():
            _update(h, f"inventory/{part}", path)
    return h.hexdigest()
