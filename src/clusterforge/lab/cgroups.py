"""One cgroup per node: `<hierarchy>/clusterforge/<cluster>/<node>` in the systemd-relevant hierarchies.

With `--keep-unit` nspawn puts the guest in `payload/` under the cgroup of its caller. Without a cgroup per
node every node's systemd would share one `payload/system.slice/ssh.service`, so a `systemctl stop ssh` in
one node would kill sshd in all of them. The supervisor enters its node's cgroup before starting nspawn;
the cgroup also finds every process of a node (even one that left its netns) and is removed on stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from clusterforge.lab import procs

BASE = "clusterforge"


def hierarchies() -> list[Path]:
    """Mount points of the cgroup2 hierarchy and of the v1 `name=systemd` one (hybrid hosts)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(rfields) < 3:
            continue
        fstype, superopts = rfields[0], rfields[2]
        if fstype == "cgroup2" or (fstype == "cgroup" and "name=systemd" in superopts.split(",")):
            out.append(Path(fields[4]))
    return out


def node_cgroups(cluster: str, node: str) -> list[Path]:
    return [h / BASE / cluster / node for h in hierarchies()]


def enter(cluster: str, node: str, pid: int | None = None) -> list[Path]:
    """Create the node's cgroups and move `pid` (default: this process) into them."""
    dirs = node_cgroups(cluster, node)
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        (d / "cgroup.procs").write_text(f"{pid or os.getpid()}\n")
    return dirs


def _subtree(d: Path) -> list[Path]:
    """d and every cgroup below it, deepest first."""
    if not d.is_dir():
        return []
    found = [Path(root) for root, _dirs, _files in os.walk(d)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def pids(cluster: str, node: str) -> set[int]:
    out: set[int] = set()
    for top in node_cgroups(cluster, node):
        for d in _subtree(top):
            with contextlib.suppress(OSError, ValueError):
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
    return {p for p in out if procs.pid_alive(p)}


def kill(cluster: str, node: str) -> None:
    """SIGKILL every process in the node's cgroups (cgroup.kill where the kernel has it)."""
    for top in node_cgroups(cluster, node):
        k = top / "cgroup.kill"
        if k.exists():
            with contextlib.suppress(OSError):
                k.write_text("1\n")
    procs.signal_all(pids(cluster, node), signal.SIGKILL)


def remove(cluster: str, node: str) -> list[Path]:
    """Kill what is left and remove the node's cgroups (and empty parents). Returns what is still there."""
    for _ in range(20):
        if not pids(cluster, node):
            break
        kill(cluster, node)
        procs.wait_until(lambda: not pids(cluster, node), 0.5)
    left = []
    for top in node_cgroups(cluster, node):
        for d in _subtree(top):
            try:
                d.rmdir()
            except OSError:
                left.append(d)
        for parent in (top.parent, top.parent.parent):
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when empty
    return left


def lab_cgroups() -> list[str]:
    """Every cgroup the lab made (any cluster) still on the host."""
    return sorted(str(d) for h in hierarchies() for d in (h / BASE).glob("*/*") if d.is_dir())
