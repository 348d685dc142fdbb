"""Simulated tools appear when their package is installed (node side, run by apt after every dpkg call).

The image builder registers a dpkg diversion for every Debian tool the simulator replaces (the real binary,
once its package is installed, lands at ``<path>.distrib``), and installs ``HOOK_CONF`` in
/etc/apt/apt.conf.d/: after each dpkg run apt calls ``clusterforge-sim pkg-sync``, which points each tool's
real path at the simulator when the owning package is installed and removes that link when it is not. So a
pristine node has no ``ibstat`` at all, exactly like a freshly installed server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import paths

# tool -> (the path its Debian package uses, the package)
DIVERTED = {
    "ibstat": ("/usr/sbin/ibstat", "infiniband-diags"),
    "ibstatus": ("/usr/sbin/ibstatus", "infiniband-diags"),
    "smpquery": ("/usr/sbin/smpquery", "infiniband-diags"),
    "ibv_devinfo": ("/usr/bin/ibv_devinfo", "ibverbs-utils"),
    "ib_write_bw": ("/usr/bin/ib_write_bw", "perftest"),
    "ib_write_lat": ("/usr/bin/ib_write_lat", "perftest"),
    "ib_read_bw": ("/usr/bin/ib_read_bw", "perftest"),
    "ib_read_lat": ("/usr/bin/ib_read_lat", "perftest"),
    "ib_send_bw": ("/usr/bin/ib_send_bw", "perftest"),
    "ib_send_lat": ("/usr/bin/ib_send_lat", "perftest"),
    "rdma": ("/usr/bin/rdma", "iproute2"),
    "dcb": ("/sbin/dcb", "iproute2"),
    "ethtool": ("/sbin/ethtool", "ethtool"),  # Debian 12 ethtool 1:6.1-1 ships /sbin/ethtool
    "dmesg": ("/bin/dmesg", "util-linux"),
    "update-grub": ("/usr/sbin/update-grub", "grub2-common"),
    "update-grub2": ("/usr/sbin/update-grub2", "grub2-common"),
    "grub-mkconfig": ("/usr/sbin/grub-mkconfig", "grub-common"),
}
HOOK_PATH = "/etc/apt/apt.conf.d/80clusterforge-sim"
HOOK_CONF = (
    "// clusterforge lab simulator: point simulated tools at the simulator once their package is installed\n"
    f'DPkg::Post-Invoke {{ "if [ -x {paths.ENTRY} ]; then {paths.ENTRY} pkg-sync; fi"; }};\n'
)
STATUS = "/var/lib/dpkg/status"


def installed_packages(status: str) -> set[str]:
    """Names of the packages dpkg's status file says are installed (``Status: install ok installed``)."""
    out = set()
    for stanza in status.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] not in (" ", "\t") and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        name, state = fields.get("Package"), fields.get("Status", "").split()
        if name and state[-1:] == ["installed"]:
            out.add(name.split(":")[0])
    return out


def wanted(installed: set[str]) -> dict[str, bool]:
    """Tool path -> whether the simulated tool belongs there now."""
    return {path: pkg in installed for path, pkg in DIVERTED.values()}


def sync(root: Path | None = None) -> list[str]:
    """Make the links match the installed packages; returns "+path" / "-path" for each change."""
    base = root if root is not None else paths.root()
    try:
        status = (base / STATUS.lstrip("/")).read_text(errors="replace")
    except OSError:
        status = ""
    changes = []
    for path, want in sorted(wanted(installed_packages(status)).items()):
        p = base / path.lstrip("/")
        ours = p.is_symlink() and os.readlink(p) == paths.ENTRY
        if want and not ours:
            if p.exists() and not p.is_symlink():
                sys.stderr.write(f"clusterforge-sim: {path} is a real file (no diversion?): left alone\n")
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.unlink(missing_ok=True)
            p.symlink_to(paths.ENTRY)
            changes.append(f"+{path}")
        elif not want and ours:
            p.unlink()
            changes.append(f"-{path}")
    return changes


def main(argv: list[str]) -> int:
    for change in sync():
        if "-v" in argv:
            print(change)
    return 0
