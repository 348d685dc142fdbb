"""What the lab may leave on the host, found and removed (crash recovery, `lab purge`, tests)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from clusterforge.lab import cgroups, config, hostsys, names, net, procs, storage
from clusterforge.lab.slurm import MUNGE_SOCKET_DIR


def _lab_processes() -> list[int]:
    """Lab daemons (cmdline under the state root), supervisors, nspawns and anything in a lab netns."""
    found: set[int] = set()
    keys = (str(config.STATE_BASE).encode(), b"clusterforge.lab.supervisor")
    for pid in procs.all_pids():
        if pid == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if any(k in cmd for k in keys) and procs.pid_alive(pid):
            found.add(pid)
    for ns in net.lab_netns():
        ino = procs.ns_inode(net.NETNS_DIR / ns)
        if ino is not None:
            found.update(procs.pids_in_netns(ino))
    return sorted(found)


def _lab_mounts() -> list[str]:
    roots = (str(config.STATE_BASE), str(config.IMAGE_CACHE))
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mp = line.split()[4].replace("\\040", " ")
        netns_dir = mp == str(net.NETNS_DIR) and not any(net.NETNS_DIR.iterdir())  # ours once emptied
        if mp.startswith(roots) or mp.startswith(f"{net.NETNS_DIR}/{config.NETNS_PREFIX}") or netns_dir:
            out.append(mp)
    return out


def leftovers() -> dict[str, list[str]]:
    """Everything of any lab still on the host; all lists empty once `lab down` has run."""
    procs_desc = []
    for pid in _lab_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        procs_desc.append(f"{pid} {cmd.strip()[:120]}")
    return {
        "processes": procs_desc,
        "netns": net.lab_netns(),
        "links": net.stray_links(),
        "bridges": [n for n in net.links() if names.is_lab_bridge(n)],
        "mounts": _lab_mounts(),
        "munge": [str(MUNGE_SOCKET_DIR)] if MUNGE_SOCKET_DIR.exists() else [],
        "sysctl": [str(hostsys._saved_file())] if hostsys._saved_file().exists() else [],
        "cgroups": cgroups.lab_cgroups(),
        "loops": storage.lab_loops(config.STATE_BASE),
    }


def purge() -> dict[str, list[str]]:
    """Remove every lab trace from the host, whatever cluster or state it is in. Returns what was found."""
    found = leftovers()
    for _ in range(3):
        pids = _lab_processes()
        if not pids:
            break
        procs.signal_all(pids, signal.SIGKILL)
        procs.wait_until(lambda: not _lab_processes(), 3.0)
    for cg in cgroups.lab_cgroups():
        cluster, node = Path(cg).parent.name, Path(cg).name
        cgroups.remove(cluster, node)
    for mp in sorted(_lab_mounts(), key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], check=False, capture_output=True)
    for loop in storage.lab_loops(config.STATE_BASE):
        subprocess.run(["losetup", "-d", loop], check=False, capture_output=True)
    for ns in net.lab_netns():
        subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
    for link in [*net.stray_links(), *(n for n in net.links() if names.is_lab_bridge(n))]:
        subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
    if MUNGE_SOCKET_DIR.is_dir():
        for f in MUNGE_SOCKET_DIR.iterdir():
            f.unlink(missing_ok=True)
        MUNGE_SOCKET_DIR.rmdir()
    net.release_netns_dir()
    hostsys.restore_limits()
    return found
