"""Small helpers of the records package: paths, UTC timestamps, JSON columns, process identity."""

from __future__ import annotations

import getpass
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DB_ENV = "CLUSTERFORGE_DB"
STATE_DIR = Path("~/.local/state/clusterforge")


def state_dir() -> Path:
    return STATE_DIR.expanduser()


def default_db_path() -> Path:
    """`$CLUSTERFORGE_DB`, else `~/.local/state/clusterforge/records.db`."""
    env = os.environ.get(DB_ENV)
    return Path(env).expanduser() if env else state_dir() / "records.db"


def records_dir() -> Path:
    """The records directory: the folder of the default records database (it holds `keys/`)."""
    return default_db_path().parent


PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def _ours(path: Path) -> bool:
    """Inside the default state folder, where every folder is clusterforge's own."""
    try:
        return path.resolve().is_relative_to(state_dir().resolve())
    except OSError:
        return False


def private_dir(path: Path, *, tighten: bool = False) -> Path:
    """Create `path` (and missing parents) as 0700 folders; tighten an existing folder to 0700 when
    `tighten`, or when it lies in the default state folder (never a folder the user named, e.g. /tmp)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue  # made meanwhile by another process
        os.chmod(d, PRIVATE_DIR)  # mkdir's mode goes through the umask: set it exactly
    if not missing and (tighten or _ours(path)):
        tighten_mode(path, PRIVATE_DIR)
    return path


def tighten_mode(path: Path, mode: int) -> None:
    """Take group and other bits away from a file or folder this user owns (left alone otherwise)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if st.st_mode & 0o077 and st.st_uid == os.getuid():
        os.chmod(path, mode)


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    """Fixed-width ISO 8601 in UTC (microseconds), so that text order is time order."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime: pass an aware one (UTC)")
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def parse_iso(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    return dt.astimezone(UTC)


def to_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def hostname() -> str:
    return socket.gethostname()


def pid_start(pid: int) -> int | None:
    """Start time of PID in clock ticks since boot (`/proc/PID/stat` field 22); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, start: int | None) -> bool:
    """True when PID runs and, where its start time was recorded, is the same process (no PID reuse)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if start is None:
        return True
    now_start = pid_start(pid)
    if now_start is None:
        return True  # no /proc: trust kill(0)
    if now_start != start:
        return False
    try:  # a zombie has exited: its record only waits for the parent
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
