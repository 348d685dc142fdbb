"""Install the simulator into the lab's node image (host side; called by the lab's image builder).

``install_into_rootfs(rootfs)``:
* copies this package to /usr/lib/clusterforge-sim/ (stub ``clusterforge``/``clusterforge.lab`` packages) and
  writes the multi-call entry /usr/lib/clusterforge-sim/clusterforge-sim;
* registers a dpkg diversion (``--package clusterforge-sim --rename``, the real binary kept as
  ``<path>.distrib``) for every Debian tool the simulator replaces, installed or not, and the apt hook
  (``pkghook.HOOK_CONF``) that links each such tool to the simulator once its package is installed: a
  tool appears only with its package, as on a real server; the vendor tools (mlnx_qos, mlxconfig,
  ofed_info ...) come from the vendor packages of the lab repository (``repo.py``), not from the image;
  kmod's modprobe/rmmod/lsmod are shadowed by PATH order (/usr/local/sbin) because the real ones must
  still serve non-simulated modules (the kernel is hardware here);
* installs and enables clusterforge-sim-boot.service and clusterforge-sim-kernel.service, the ssh drop-in
  behind the sshd-stopped fault, /etc/default/grub when absent, and mkdir/rmdir shims for configfs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import paths, pkghook, units
from .pkghook import DIVERTED

# shadowed by PATH order: the real tool stays in charge of everything the simulator does not know
SHADOWED = {
    "modprobe": "/usr/local/sbin/modprobe",
    "rmmod": "/usr/local/sbin/rmmod",
    "lsmod": "/usr/local/sbin/lsmod",
}

ENTRY_SCRIPT = f"""#!/usr/bin/python3 -I
# clusterforge lab hardware simulator: multi-call entry (see /usr/share/doc/clusterforge-sim/README)
import sys

sys.path.insert(0, "{paths.HOME}")
from clusterforge.lab.sim.main import main

main()
"""
MKDIR_SHIM = f"""#!/bin/sh
# clusterforge-sim: configfs semantics for /sys/kernel/config/rdma_cm (a mkdir'ed HCA dir gets ports/N/)
/bin/mkdir "$@" || exit $?
case "$PWD $*" in *rdma_cm*) {paths.ENTRY} configfs-sync >/dev/null 2>&1 ;; esac
exit 0
"""
RMDIR_SHIM = """#!/bin/sh
# clusterforge-sim: configfs semantics for /sys/kernel/config/rdma_cm (rmdir drops the attributes too)
case "$PWD $*" in
*rdma_cm*) for a in "$@"; do case "$a" in -*) ;; *) rm -rf -- "$a/ports" 2>/dev/null ;; esac; done ;;
esac
exec /bin/rmdir "$@"
"""
README = """clusterforge lab hardware simulator
===================================
Simulated GPUs, ConnectX NICs and kernel state for lab nodes (systemd-nspawn containers).
Entry: /usr/lib/clusterforge-sim/clusterforge-sim TOOL ARGS; state: /var/lib/clusterforge-sim/state.json.
Faults: clusterforge-sim fault kinds|list|set KIND [K=V..]|clear KIND|all.
See docs/simulator.md in the clusterforge repository.
"""


def _dpkg_path(rootfs: Path, tool: str, default: str) -> str:
    """The path dpkg's database knows for an installed tool (usrmerge: /bin/x vs /usr/bin/x), else default."""
    cands = [default] + [
        f"{d}/{tool}" for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin") if f"{d}/{tool}" != default
    ]
    info = rootfs / "var/lib/dpkg/info"
    if info.is_dir():
        for lst in info.glob("*.list"):
            lines = set(lst.read_text(errors="replace").split("\n"))
            for c in cands:
                if c in lines:
                    return c
    return default


def _divert(rootfs: Path, path: str) -> None:
    listed = subprocess.run(
        ["dpkg-divert", f"--root={rootfs}", "--list", path], capture_output=True, text=True, check=False
    ).stdout
    if "clusterforge-sim" in listed:
        return
    subprocess.run(
        [
            "dpkg-divert",
            f"--root={rootfs}",
            "--package",
            "clusterforge-sim",
            "--rename",
            "--divert",
            f"{path}.distrib",
            "--add",
            path,
        ],
        check=True,
        capture_output=True,
    )


def _link(rootfs: Path, path: str) -> None:
    target = rootfs / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    target.symlink_to(paths.ENTRY)


def _write(rootfs: Path, path: str, text: str, mode: int = 0o644) -> None:
    target = rootfs / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_text(text)
    target.chmod(mode)


def copy_package(rootfs: Path) -> None:
    home = rootfs / paths.HOME.lstrip("/")
    dest = home / "clusterforge/lab/sim"
    shutil.rmtree(home / "clusterforge", ignore_errors=True)
    dest.mkdir(parents=True)
    (home / "clusterforge/__init__.py").write_text(
        '"""Stub: only the simulator is installed in lab nodes."""\n'
    )
    (home / "clusterforge/lab/__init__.py").write_text("")
    src = Path(__file__).resolve().parent
    for f in sorted(src.glob("*.py")):
        if f.name not in ("cli.py",):
            shutil.copy2(f, dest / f.name)
    _write(rootfs, paths.ENTRY, ENTRY_SCRIPT, 0o755)


def install_into_rootfs(rootfs: Path) -> None:
    """Install the simulator into a Debian rootfs (idempotent)."""
    rootfs = Path(rootfs)
    copy_package(rootfs)
    for tool, (default, _pkg) in DIVERTED.items():
        _divert(rootfs, _dpkg_path(rootfs, tool, default))
    _write(rootfs, pkghook.HOOK_PATH, pkghook.HOOK_CONF)
    pkghook.sync(rootfs)  # the tools of packages already in the image (iproute2, util-linux, grub2-common)
    for path in SHADOWED.values():
        _link(rootfs, path)
    _write(rootfs, "/usr/local/bin/mkdir", MKDIR_SHIM, 0o755)
    _write(rootfs, "/usr/local/bin/rmdir", RMDIR_SHIM, 0o755)
    _write(rootfs, "/lib/systemd/system/clusterforge-sim-boot.service", units.BOOT_UNIT)
    _write(rootfs, "/lib/systemd/system/clusterforge-sim-kernel.service", units.KERNEL_UNIT)
    _write(rootfs, "/lib/systemd/system/ssh.service.d/clusterforge-sim.conf", units.SSH_DROPIN)
    _write(rootfs, "/usr/share/doc/clusterforge-sim/README", README)
    for d in (
        paths.PKG_MARKERS,
        "/var/lib/clusterforge-sim",
        paths.FAULT_FLAGS,
        "/etc/default/grub.d",
        "/boot/grub",
    ):
        (rootfs / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    if not (rootfs / "etc/default/grub").exists():
        from .grub import DEFAULT_GRUB

        _write(rootfs, "/etc/default/grub", DEFAULT_GRUB)
    subprocess.run(
        [
            "systemctl",
            f"--root={rootfs}",
            "enable",
            "--quiet",
            "clusterforge-sim-boot.service",
            "clusterforge-sim-kernel.service",
        ],
        check=True,
        capture_output=True,
    )
