"""The mounts that put simulated kernel state at real paths inside a node (verified in systemd-nspawn).

* ``/sys/class``: a tmpfs holding a bind mount of every real class directory (from a private sysfs mount)
  plus the simulated ``infiniband/``. Not an overlay: an overlay caches negative dentries, so a netdev looked
  up before it existed would stay invisible in /sys/class/net; per-class bind mounts stay live.
* ``/sys/devices/virtual/net/<rail>``: an overlay per RoCE rail netdev (the ECN knobs live in ``ecn/``);
  ``/sys/class/net/<rail>`` is a symlink into it, the real attributes read through the lower layer.
* ``/sys/devices/system/cpu``, ``/sys/kernel``, ``/sys/module``: overlays with tmpfs uppers
  (``/sys/module`` does not exist in nspawn's /sys: it is created in nspawn's read-only /sys tmpfs after a
  brief remount, its lower is the private sysfs' module/).
* Files bind-mounted over ``/proc/...`` (procfs cannot be an overlay lower).
Under a test root (``$CLUSTERFORGE_SIM_ROOT``) nothing is mounted; binds are emulated with symlinks.
"""

from __future__ import annotations

import os
import subprocess

from . import paths

OVL = f"{paths.RUN}/ovl"
REALSYS = f"{paths.RUN}/realsys"
REALPROC = f"{paths.RUN}/realproc"
OVERLAYS = ["/sys/devices/system/cpu", "/sys/kernel", "/sys/module"]
TAG = "clusterforge-sim"


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def mounted(target: str, tag: str | None = TAG) -> bool:
    for line in paths.read("/proc/self/mountinfo").splitlines():
        f = line.split()
        if len(f) > 8 and f[4] == target and (tag is None or tag in line):
            return True
    return False


def real_sysfs() -> str | None:
    """A private sysfs mount of the node's network namespace (live, not overlaid)."""
    os.makedirs(REALSYS, exist_ok=True)
    if os.path.ismount(REALSYS):
        return REALSYS
    r = subprocess.run(
        ["mount", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", REALSYS],
        capture_output=True,
        check=False,
    )
    return REALSYS if r.returncode == 0 else None


def _make_mountpoint(target: str) -> None:
    parent = os.path.dirname(target)
    subprocess.run(["mount", "-o", "remount,rw", parent], capture_output=True, check=False)
    try:
        os.makedirs(target, exist_ok=True)
    finally:
        subprocess.run(["mount", "-o", "remount,ro", parent], capture_output=True, check=False)


def overlay(target: str, name: str, lower: str | None = None) -> None:
    if mounted(target):
        return
    if not os.path.isdir(target):
        _make_mountpoint(target)
        real = real_sysfs()
        lower = f"{real}/{target.removeprefix('/sys/')}" if real else None
        if lower is None or not os.path.isdir(lower):
            lower = f"{OVL}/empty"
            os.makedirs(lower, exist_ok=True)
    up, wk = f"{OVL}/{name}/upper", f"{OVL}/{name}/work"
    os.makedirs(up, exist_ok=True)
    os.makedirs(wk, exist_ok=True)
    _run(
        [
            "mount",
            "-t",
            "overlay",
            TAG,
            "-o",
            f"lowerdir={lower or target},upperdir={up},workdir={wk}",
            target,
        ]
    )


def class_view() -> None:
    """tmpfs on /sys/class: live bind mounts of the real classes + a writable infiniband/."""
    if mounted("/sys/class"):
        return
    real = real_sysfs()
    if real is None:
        overlay("/sys/class", "class")  # fallback (no private sysfs): an overlay
        return
    _run(["mount", "-t", "tmpfs", "-o", "mode=0755,nosuid,nodev,noexec", TAG, "/sys/class"])
    for name in sorted(os.listdir(f"{real}/class")):
        if name == "infiniband":
            continue
        os.makedirs(f"/sys/class/{name}", exist_ok=True)
        _run(["mount", "--bind", f"{real}/class/{name}", f"/sys/class/{name}"])
    os.makedirs("/sys/class/infiniband", exist_ok=True)


def rail_overlay(netdev: str) -> bool:
    """Overlay /sys/devices/virtual/net/<netdev> (for its ecn/ knobs); False while the netdev is absent."""
    target = f"/sys/devices/virtual/net/{netdev}"
    if mounted(target):
        return True
    real = real_sysfs()
    if real is None or not os.path.isdir(f"{real}/devices/virtual/net/{netdev}"):
        return False
    overlay(target, f"net-{netdev}")
    return True


def mount_views() -> None:
    """Everything but the per-rail overlays (the boot unit adds those for the rails present)."""
    os.makedirs(OVL, exist_ok=True)
    if not os.path.ismount(OVL):
        _run(["mount", "-t", "tmpfs", "-o", "mode=0755", TAG, OVL])
    real_sysfs()
    class_view()
    for target in OVERLAYS:
        overlay(target, target.strip("/").replace("/", "-"))
    os.makedirs(REALPROC, exist_ok=True)
    if not os.path.ismount(REALPROC):
        subprocess.run(
            ["mount", "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", REALPROC],
            check=False,
            capture_output=True,
        )


def bind_file(src: str, target: str) -> None:
    """Bind-mount src over target (inside a node); under a test root a symlink stands in for the mount."""
    if paths.in_node():
        if os.path.exists(target) and not mounted(target, None):
            _run(["mount", "--bind", src, target])  # a kernel without the file (no /proc/modules): skipped
        return
    link = paths.p(target)
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(paths.p(src))
