"""Detached daemons and pid helpers (no root needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from clusterforge.lab import procs


def test_spawn_daemon_detaches(tmp_path: Path) -> None:
    pidfile, log = tmp_path / "d.pid", tmp_path / "d.log"
    pid = procs.spawn_daemon(["sleep", "30"], pidfile, log)
    try:
        assert procs.pid_alive(pid)
        assert procs.live_pid(pidfile, "sleep") == pid
        assert procs.live_pid(pidfile, "python") is None
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(stat[1]) != os.getpid()  # not our child: survives us
        assert int(stat[3]) == pid  # session leader of its own session
    finally:
        procs.stop_pid(pid, timeout=2)
    assert not procs.pid_alive(pid)


def test_pids_by_cmdline(tmp_path: Path) -> None:
    marker = f"{tmp_path}/clusterforge-marker"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
    try:
        assert procs.wait_until(lambda: procs.pids_by_cmdline(f"sleep(30)\0{marker}") == [child.pid], 5)
        assert child.poll() is None
        assert procs.pids_by_cmdline(f"{marker}-other") == []
        own = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0].decode()
        assert os.getpid() not in procs.pids_by_cmdline(own), "never this process"
    finally:
        child.kill()
        child.wait()
    assert procs.pids_by_cmdline(marker) == []


def test_pid_helpers(tmp_path: Path) -> None:
    assert procs.pid_alive(os.getpid())
    assert not procs.pid_alive(None) and not procs.pid_alive(0)
    assert procs.read_pid(tmp_path / "missing") is None
    (tmp_path / "bad").write_text("x")
    assert procs.read_pid(tmp_path / "bad") is None
    assert procs.pss_kib([os.getpid()]) > 0


def test_zombie_counts_as_dead() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    assert procs.wait_until(lambda: not procs.pid_alive(pid), 5)
    os.waitpid(pid, 0)
    procs.signal_all([pid], signal.SIGTERM)  # gone: no error


def test_cgroup_hierarchies_exist() -> None:
    from clusterforge.lab import cgroups

    found = cgroups.hierarchies()
    assert all(p.is_dir() for p in found)
    assert cgroups.node_cgroups("c", "n") == [p / "clusterforge" / "c" / "n" for p in found]
