"""Simulated kernel modules: ``modprobe``/``rmmod`` for the GPU and ConnectX stack.

A module "loaded" is recorded in state.json (kernel.modules) and shows where the real kernel shows it:
``/proc/modules`` (so the real ``lsmod`` lists it; the boot unit bind-mounts a file over /proc/modules) and
``/sys/module/<name>/`` (in the /sys/module overlay). Modules the simulator does not know are handed to the
real modprobe (which, in a container, fails the way it would).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from typing import Any

from . import paths
from . import state as S

# name -> (dependencies, size, needs the NVIDIA driver package, taint)
MODULES: dict[str, tuple[list[str], int, bool, str]] = {
    "ib_core": ([], 491520, False, ""),
    "ib_uverbs": (["ib_core"], 192512, False, ""),
    "ib_umad": (["ib_core"], 40960, False, ""),
    "ib_ipoib": (["ib_core"], 163840, False, ""),
    "iw_cm": (["ib_core"], 57344, False, ""),
    "rdma_cm": (["iw_cm", "ib_core"], 143360, False, ""),
    "rdma_ucm": (["rdma_cm", "ib_uverbs", "ib_core"], 36864, False, ""),
    "mlx5_core": ([], 2494464, False, ""),
    "mlx5_ib": (["mlx5_core", "ib_uverbs", "ib_core"], 479232, False, ""),
    "nvidia": ([], 61054976, True, " (POE)"),
    "nvidia_modeset": (["nvidia"], 1511424, True, " (POE)"),
    "nvidia_uvm": (["nvidia"], 4956160, True, " (POE)"),
    "nvidia_drm": (["nvidia_modeset"], 122880, True, " (POE)"),
    "nvidia_peermem": (["nvidia", "ib_core"], 16384, True, " (OE)"),
}
BOOT_MODULES = ["mlx5_core", "ib_core", "ib_uverbs", "ib_umad", "mlx5_ib", "iw_cm", "rdma_cm", "rdma_ucm"]
BOOT_GPU_MODULES = ["nvidia", "nvidia_modeset", "nvidia_uvm"]  # udev autoload when the driver is installed
PROC_MODULES_SRC = f"{paths.RUN}/proc/modules"
HOST_MODULES = f"{paths.RUN}/proc/modules.host"
REAL_MODPROBE = "/usr/sbin/modprobe"  # the simulator's modprobe sits first in PATH (/usr/local/sbin)


def canon(name: str) -> str:
    return name.replace("-", "_")


def available(name: str) -> bool:
    spec = MODULES.get(canon(name))
    return spec is not None and (not spec[2] or S.driver() is not None)


def _closure(names: list[str]) -> list[str]:
    order: list[str] = []

    def visit(n: str) -> None:
        for d in MODULES[n][0]:
            visit(d)
        if n not in order:
            order.append(n)

    for n in names:
        visit(canon(n))
    return order


def load(st: dict[str, Any], names: list[str]) -> list[str]:
    """Load modules and their dependencies; returns the ones newly loaded."""
    mods = S.modules_loaded(st)
    drv = S.driver()
    new = []
    for n in _closure(names):
        if n not in mods:
            mods[n] = {"version": drv["version"]} if MODULES[n][2] and drv else {}
            new.append(n)
            _announce(st, n, drv)
    sync_views(st)
    return new


def _announce(st: dict[str, Any], name: str, drv: dict[str, Any] | None) -> None:
    from . import klog

    if name == "nvidia" and drv:
        open_ = "Open " if drv.get("open") else ""
        klog.log("nvidia: loading out-of-tree module taints kernel.", 4, journal=False)
        klog.log(
            f"NVRM: loading NVIDIA UNIX {open_}x86_64 Kernel Module  {drv['version']}  "
            "Release Build  (dvs-builder@U16-I2-C03-12-4)  Thu Feb 20 00:35:52 UTC 2025",
            5,
            journal=False,
        )
    elif name == "nvidia_uvm":
        klog.log("nvidia-uvm: Loaded the UVM driver, major device number 508.", 6, journal=False)
    elif name == "mlx5_core":
        for nic in st["nics"]:
            klog.log(f"mlx5_core {nic['pci']}: firmware version: {nic['fw']}", 6, journal=False)
            klog.log(f"mlx5_core {nic['pci']}: Port module event: module 0, Cable plugged", 6, journal=False)


def holders(st: dict[str, Any], name: str) -> list[str]:
    mods = S.modules_loaded(st)
    return sorted(m for m in mods if name in MODULES.get(m, ([], 0, False, ""))[0])


def unload(st: dict[str, Any], name: str) -> str | None:
    """Unload one module; returns an error message (modprobe's) or None."""
    name = canon(name)
    mods = S.modules_loaded(st)
    if name not in mods:
        return None
    users = holders(st, name)
    if users:
        return f"modprobe: FATAL: Module {name} is in use.\n"
    del mods[name]
    sync_views(st)
    return None


def sync_views(st: dict[str, Any]) -> None:
    """Rewrite /proc/modules (bind source, rewritten in place) and /sys/module/<name>/ dirs."""
    mods = S.modules_loaded(st)
    lines = []
    for name in sorted(mods, key=lambda m: list(MODULES).index(m) if m in MODULES else 99, reverse=True):
        _deps, size, _, taint = MODULES.get(name, ([], 16384, False, ""))
        users = holders(st, name)
        used = ",".join(users) + "," if users else "-"
        lines.append(f"{name} {size} {len(users)} {used} Live 0x0000000000000000{taint}")
    host = paths.read(HOST_MODULES)
    src = paths.p(PROC_MODULES_SRC)
    src.parent.mkdir(parents=True, exist_ok=True)
    # same inode (the bind mount over /proc/modules stays valid), never seen empty
    paths.overwrite(src, "".join(line + "\n" for line in lines) + host)
    device_nodes(st)
    sysmod = paths.p("/sys/module")
    if not sysmod.is_dir():
        return
    for name in MODULES:
        d = sysmod / name
        if name in mods:
            if not (d / "initstate").exists():
                _module_dir(st, name, d)
        elif (d / "initstate").exists() and not os.path.ismount(d):
            shutil.rmtree(d, ignore_errors=True)


NVIDIA_MAJOR = 195  # the kernel's devices.txt: 195 char "Nvidia graphics devices" (nvidiactl = minor 255)
UVM_MAJOR = 508  # dynamic on a real kernel; the one the simulated nvidia-uvm announces


def device_nodes(st: dict[str, Any]) -> None:
    """/dev/nvidia<N> for each GPU the driver found, /dev/nvidiactl, /dev/nvidia-uvm{,-tools}, as the driver
    packages' udev rules (nvidia-modprobe) create them when the modules load, and gone once unloaded. A GPU
    that falls off the bus keeps its node until the next load; one missing at load gets none (Slurm's
    gres.conf `File=` then finds one fewer). Outside a node (a test root) plain files stand for them."""
    mods = S.modules_loaded(st)
    want: dict[str, tuple[int, int]] = {}
    if "nvidia" in mods:
        want["nvidiactl"] = (NVIDIA_MAJOR, 255)
        want.update({f"nvidia{g['index']}": (NVIDIA_MAJOR, int(g["index"])) for g in S.visible_gpus(st)})
    if "nvidia_uvm" in mods:
        want.update({"nvidia-uvm": (UVM_MAJOR, 0), "nvidia-uvm-tools": (UVM_MAJOR, 1)})
    dev = paths.p("/dev")
    if not dev.is_dir():
        return
    for f in dev.glob("nvidia*"):
        gpu_or_ctl = f.name == "nvidiactl" or f.name.removeprefix("nvidia").isdigit()
        if (gpu_or_ctl and "nvidia" not in mods) or (f.name.startswith("nvidia-uvm") and f.name not in want):
            f.unlink(missing_ok=True)  # the module is gone (a GPU lost while loaded keeps its node)
    for name, (major, minor) in want.items():
        f = dev / name
        if f.exists():
            continue
        try:
            if paths.in_node():
                os.mknod(f, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
                os.chmod(f, 0o666)
            else:
                f.write_text("")
        except OSError as e:  # not root (nvidia-modprobe is setuid root): the next root load makes it
            sys.stderr.write(f"nvidia-modprobe: cannot create {f}: {e.strerror}\n")


def _module_dir(st: dict[str, Any], name: str, d: Any) -> None:
    (d / "parameters").mkdir(parents=True, exist_ok=True)
    (d / "holders").mkdir(exist_ok=True)
    (d / "initstate").write_text("live\n")
    (d / "refcnt").write_text("0\n")
    (d / "coresize").write_text(f"{MODULES[name][1]}\n")
    (d / "taint").write_text("POE\n" if MODULES[name][2] else "\n")
    ver = S.modules_loaded(st)[name].get("version")
    if ver:
        (d / "version").write_text(f"{ver}\n")
    if name == "nvidia":
        for k, v in {
            "NVreg_EnableGpuFirmware": "18",
            "NVreg_OpenRmEnableUnsupportedGpus": "0",
            "NVreg_EnablePCIERelaxedOrderingMode": "0",
        }.items():
            (d / "parameters" / k).write_text(f"{v}\n")


def modules_load_d() -> list[str]:
    """Modules named in /etc/modules-load.d/*.conf, /usr/lib/modules-load.d and /etc/modules."""
    names: list[str] = []
    files = []
    for d in ("/usr/lib/modules-load.d", "/run/modules-load.d", "/etc/modules-load.d"):
        pd = paths.p(d)
        if pd.is_dir():
            files += sorted(pd.glob("*.conf"))
    if paths.p("/etc/modules").is_file():
        files.append(paths.p("/etc/modules"))
    for f in files:
        for line in f.read_text(errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith(";"):
                names.append(line.split()[0])
    return names


def main(argv: list[str], prog: str = "modprobe") -> int:
    remove = prog == "rmmod"
    quiet = dry = False
    names: list[str] = []
    for a in argv:
        if a in ("-r", "--remove"):
            remove = True
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a in ("-n", "--dry-run"):
            dry = True
        elif a.startswith("-"):
            continue  # -a, -v, -b, --first-time ...: accepted
        elif "=" in a and names:
            continue  # module parameters
        else:
            names.append(a)
    if prog == "modprobe" and "-a" not in argv and "--all" not in argv and not remove:
        names = names[:1]
    if not names:
        sys.stderr.write(f"{prog}: ERROR: missing parameters. See -h.\n")
        return 1
    unknown = [n for n in names if canon(n) not in MODULES]
    if unknown:
        real = REAL_MODPROBE if prog == "modprobe" else "/usr/sbin/rmmod"
        if os.path.exists(paths.p(real)) and paths.in_node():
            os.execv(real, [real, *argv])
        sys.stderr.write(
            f"modprobe: FATAL: Module {unknown[0]} not found in directory /lib/modules/{os.uname().release}\n"
        )
        return 1
    with S.locked() as st:
        for n in names:
            if remove:
                err = None if dry else unload(st, n)
                if err:
                    sys.stderr.write(
                        err if prog == "modprobe" else f"rmmod: ERROR: Module {canon(n)} is in use\n"
                    )
                    return 1
            elif not available(n):
                if not quiet:
                    sys.stderr.write(
                        f"modprobe: FATAL: Module {n} not found in directory "
                        f"/lib/modules/{os.uname().release}\n"
                    )
                return 1
            elif not dry:
                load(st, [n])
    return 0


def lsmod(argv: list[str]) -> int:
    """kmod's lsmod layout from the simulated /proc/modules (used where the kernel has no /proc/modules)."""
    text = paths.read(PROC_MODULES_SRC) or paths.read("/proc/modules")
    out = ["Module                  Size  Used by"]
    for line in text.splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        used = f[3].rstrip(",") if f[3] != "-" else ""
        out.append(f"{f[0]:<19} {f[1]:>8}  {f[2]}" + (f" {used}" if used else ""))
    sys.stdout.write("\n".join(out) + "\n")
    return 0
