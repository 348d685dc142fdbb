"""Processes of the lab: detached daemons with pidfiles, finding a node's processes by its netns."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

DAEMON_SH = 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"'


def pid_alive(pid: int | None) -> bool:
    """True for a live process (zombies count as dead)."""
    if not pid or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def live_pid(pidfile: Path, comm: str | None = None) -> int | None:
    """The pid in `pidfile` when that process lives (and, given `comm`, its command name starts so)."""
    pid = read_pid(pidfile)
    if not pid_alive(pid):
        return None
    if comm is not None:
        try:
            if not Path(f"/proc/{pid}/comm").read_text().strip().startswith(comm[:15]):
                return None
        except OSError:
            return None
    return pid


def spawn_daemon(
    argv: list[str], pidfile: Path, logfile: Path, env: Mapping[str, str] | None = None, timeout: float = 5.0
) -> int:
    """Start `argv` detached (own session, re-parented away from us: survives the CLI) and return its pid."""
    pidfile.unlink(missing_ok=True)
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as log, open(os.devnull, "rb") as null:
        subprocess.run(
            ["setsid", "-f", "sh", "-c", DAEMON_SH, str(pidfile), *argv],
            stdin=null,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
            check=True,
            env=dict(env or os.environ),
        )
    pid: int | None = None

    def written() -> bool:  # keep the pid as read: the daemon may rewrite its pidfile right after
        nonlocal pid
        pid = read_pid(pidfile)
        return pid is not None

    if not wait_until(written, timeout) or pid is None:
        raise RuntimeError(f"{argv[0]} did not start (see {logfile})")
    # the pidfile is written by the wrapper shell just before it execs argv: wait for the exec, so that
    # callers checking the command name (`live_pid(pidfile, comm)`) never see the shell
    wait_until(lambda: _argv0(pid) in (argv[0], None), timeout)
    return pid


def _argv0(pid: int) -> str | None:
    """The first word of the process's command line; None when it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return None


def wait_until(pred: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def ns_inode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def pids_by_cmdline(needle: str) -> list[int]:
    """Every live process but this one whose command line (arguments NUL-separated) contains `needle`."""
    key = needle.encode()
    out = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            if key in Path(f"/proc/{pid}/cmdline").read_bytes() and pid_alive(pid):
                out.append(pid)
        except OSError:
            continue
    return out


def pids_in_netns(inode: int) -> list[int]:
    """Every live process whose network namespace is `inode`."""
    out = []
    for pid in all_pids():
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == inode and pid_alive(pid):
                out.append(pid)
        except OSError:
            continue
    return out


def container_init(inode: int) -> int | None:
    """Host pid of the node's PID 1 (systemd): the process in its netns that is pid 1 of its own pid ns."""
    for pid in pids_in_netns(inode):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                if len(ids) > 1 and ids[-1] == "1":
                    return pid
    return None


def signal_all(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop_pid(pid: int | None, timeout: float = 5.0, sig: int = signal.SIGTERM) -> None:
    """Signal, wait up to `timeout`, then SIGKILL."""
    if not pid_alive(pid):
        return
    assert pid is not None
    signal_all([pid], sig)
    if not wait_until(lambda: not pid_alive(pid), timeout):
        signal_all([pid], signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid), 2.0)


def pss_kib(pids: Iterable[int]) -> int:
    """Summed proportional set size (kB) of `pids` from /proc/<pid>/smaps_rollup."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total
