"""Host kernel limits the lab needs raised, and put back once the last lab node is gone.

Every node's systemd, journald, logind, dbus... take inotify instances from root's per-user budget
(`fs.inotify.max_user_instances`, 128 by default): about 8 per node, so ~16 nodes exhaust it and the next
guest's systemd dies with "Failed to create control group inotify object: Too many open files".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from clusterforge.lab import config

log = logging.getLogger(__name__)
PROC_SYS = Path("/proc/sys")
# sysctl → value the lab wants at least (per-node needs are far below these for a few hundred nodes)
WANTED = {"fs/inotify/max_user_instances": 8192, "fs/inotify/max_user_watches": 524288}


def _saved_file() -> Path:
    return config.STATE_BASE / "host-sysctl.json"


def _read(key: str) -> int:
    return int((PROC_SYS / key).read_text().split()[0])


def raise_limits() -> dict[str, int]:
    """Raise what is below WANTED, remembering the original values (once). Returns what was changed."""
    saved_path = _saved_file()
    saved: dict[str, int] = json.loads(saved_path.read_text()) if saved_path.exists() else {}
    changed = {}
    for key, want in WANTED.items():
        have = _read(key)
        if have < want:
            saved.setdefault(key, have)
            (PROC_SYS / key).write_text(f"{want}\n")
            changed[key] = want
            log.info("raised %s from %d to %d (restored by `lab down`)", key.replace("/", "."), have, want)
    if changed:
        saved_path.parent.mkdir(parents=True, exist_ok=True)
        saved_path.write_text(json.dumps(saved))
    return changed


def restore_limits() -> dict[str, int]:
    """Put back the values found before the lab raised them (call once no lab node is left)."""
    saved_path = _saved_file()
    if not saved_path.exists():
        return {}
    saved: dict[str, int] = json.loads(saved_path.read_text())
    for key, value in saved.items():
        (PROC_SYS / key).write_text(f"{value}\n")
    saved_path.unlink()
    return saved
