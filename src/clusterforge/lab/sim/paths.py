"""Node-side paths used by the simulator.

Every real path is resolved under ``$CLUSTERFORGE_SIM_ROOT`` (default ``/``), so the host-side unit tests
run the very same code against a temporary directory. Inside a node the variable is unset.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME = "/usr/lib/clusterforge-sim"  # the package copy and the multi-call entry live here
ENTRY = f"{HOME}/clusterforge-sim"
STATE = "/var/lib/clusterforge-sim/state.json"  # persistent node state (in the node's overlay upper)
FAULT_FLAGS = "/var/lib/clusterforge-sim/faults"  # one empty file per active fault (for unit conditions)
RUN = "/run/clusterforge-sim"  # per-boot scratch: kernel log, overlay uppers, bind sources
SHARE = "/usr/share/clusterforge-sim"  # files shipped by the simulated NVIDIA packages
PKG_MARKERS = f"{SHARE}/packages"  # <name>.json written by each simulated .deb (version info)
GRUB_CFG = "/boot/grub/grub.cfg"


def root() -> Path:
    return Path(os.environ.get("CLUSTERFORGE_SIM_ROOT") or "/")


def p(path: str) -> Path:
    """A node path under the simulator root."""
    return root() / path.lstrip("/")


def in_node() -> bool:
    """True when running for real inside a node (not under a test root)."""
    return root() == Path("/")


def read(path: str, default: str = "") -> str:
    try:
        return p(path).read_text()
    except OSError:
        return default


def replace_text(target: Path, text: str) -> None:
    """Give a simulated kernel file new contents the way the kernel does: a reader sees the old value or the
    new one, never an empty file (write beside it, then rename over it; nothing written when unchanged).
    Where no file can be made beside it (a read-only or real kernel directory), it is written in place."""
    try:
        if target.read_text() == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    tmp = target.with_name(f".{target.name}.cf-new")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)
        target.write_text(text)


def overwrite(target: Path, text: str) -> None:
    """New contents in the same inode (a bind mount may point at it), never truncated first: the new bytes
    go over the old ones in one write and only then is the file cut to length, so a reader (a validator
    parsing /proc/meminfo while kerneld refreshes it) never sees it empty. Nothing written when unchanged."""
    data = text.encode()
    try:
        if target.read_bytes() == data:
            return
    except OSError:
        pass
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def write(path: str, text: str, mode: int | None = None) -> None:
    target = p(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    if mode is not None:
        target.chmod(mode)
