"""``clusterforge-sim boot``: run by clusterforge-sim-boot.service early at every node boot.

1. The state transitions real hardware makes at a reboot: pending ECC/MIG modes and mlxconfig settings
   take effect, NIC QoS (mlnx_qos) returns to firmware defaults, persistence mode is off until a daemon
   sets it, the NVSwitch fabric is unconfigured until the fabric manager runs, volatile ECC counters reset.
2. The kernel command line is read from the bootloader config (/boot/grub/grub.cfg, written by
   update-grub) and boot-time hugepages are allocated from it.
3. Kernel views the container cannot own are mounted at their real paths (see :mod:`.mounts`): /sys/class
   rebuilt on a tmpfs from live bind mounts plus infiniband/, overlays with tmpfs uppers on
   /sys/devices/system/cpu, /sys/kernel, /sys/module and each RoCE rail's /sys/devices/virtual/net/<if>,
   and files bind-mounted over /proc/cmdline, /proc/meminfo, /proc/modules and the simulated /proc/sys keys.
4. Boot modules are "loaded" (mlx5/ib stack; the NVIDIA modules when the driver is installed; anything in
   modules-load.d - systemd-modules-load is skipped in containers), sysctl.d is applied to the simulated
   keys (systemd-sysctl is skipped: /proc/sys is read-only in nspawn), active faults are re-asserted.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from . import faults, grub, klog, kmod, mounts, paths, sysfs
from . import state as S

PROC = f"{paths.RUN}/proc"
BOOTED = f"{paths.RUN}/booted"
HUGE_SIZES = {"1G": "1048576", "1048576K": "1048576", "2M": "2048", "2048K": "2048"}


def parse_hugepages(cmdline: str) -> dict[str, int]:
    """Boot-time pools from ``hugepagesz=X hugepages=N`` pairs (``hugepages=0:1,1:2`` per node is summed)."""
    out = {"1048576": 0, "2048": 0}
    default = "2048"
    size = None
    for tok in cmdline.split():
        k, _, v = tok.partition("=")
        if k == "default_hugepagesz":
            default = HUGE_SIZES.get(v.upper(), default)
        elif k == "hugepagesz":
            size = HUGE_SIZES.get(v.upper())
        elif k == "hugepages":
            n = sum(int(x.split(":")[1]) for x in v.split(",") if ":" in x) if ":" in v else int(v or 0)
            out[size or default] = n
            size = None
    return out


def default_cmdline(st: dict[str, Any]) -> str:
    kver = grub.kernel_release()
    return f"BOOT_IMAGE=/boot/vmlinuz-{kver} root=UUID={st['kernel']['root_uuid']} ro quiet"


def transition(st: dict[str, Any]) -> None:
    """What a reboot does to the hardware state (no I/O besides reading grub.cfg)."""
    st["boots"] = int(st.get("boots", 0)) + 1
    for g in st["gpus"]:
        g["ecc"]["current"] = g["ecc"]["pending"]
        g["mig"]["current"] = g["mig"]["pending"]
        g["persistence"] = False
        g["fabric"] = "In Progress"
    for nic in st["nics"]:
        mc = nic["mlxconfig"]
        mc["current"].update(mc.get("pending") or {})
        mc["pending"] = {}
        nic["qos"] = S.default_qos()
    cfg = paths.read(paths.GRUB_CFG)
    cmdline = grub.boot_cmdline(cfg) if cfg else None
    st["kernel"]["cmdline"] = cmdline or default_cmdline(st)
    st["kernel"]["hugepages"] = parse_hugepages(st["kernel"]["cmdline"])
    st["kernel"]["modules"] = {}


# ---- mounts ---------------------------------------------------------------------------------------------


def real_proc(name: str) -> str:
    """A /proc file as the kernel shows it (our private procfs once the public one is covered)."""
    for base in (mounts.REALPROC, "/proc") if paths.in_node() else ("/proc",):
        text = paths.read(f"{base}/{name}") if paths.in_node() else ""
        if text:
            return text
    return paths.read(f"{PROC}/{name}.host")


def meminfo(st: dict[str, Any], host: str) -> str:
    """/proc/meminfo with the hugepage lines of the simulated pools."""
    pools = sysfs.hugepages_now() if paths.p("/sys/kernel/mm/hugepages").is_dir() else {}
    pools = (
        {k: pools.get(k, v) for k, v in st["kernel"]["hugepages"].items()}
        if pools
        else st["kernel"]["hugepages"]
    )
    params = sysfs.cmdline_params(st["kernel"]["cmdline"] or "")
    default = HUGE_SIZES.get(params.get("default_hugepagesz", "2M").upper(), "2048")
    n = pools.get(default, 0)
    huge = {
        "HugePages_Total": f"{n:>8}",
        "HugePages_Free": f"{n:>8}",
        "HugePages_Rsvd": f"{0:>8}",
        "HugePages_Surp": f"{0:>8}",
        "Hugepagesize": f"{int(default):>8} kB",
        "Hugetlb": f"{sum(int(s) * c for s, c in pools.items()):>8} kB",
    }
    out = []
    for line in (host or "MemTotal:       16384000 kB\nMemFree:        15000000 kB\n").splitlines():
        key = line.split(":", 1)[0]
        out.append(f"{key + ':':<16}{huge.pop(key)}" if key in huge else line)
    out += [f"{k + ':':<16}{v}" for k, v in huge.items()]
    return "\n".join(out) + "\n"


def write_in_place(path: str, text: str) -> None:
    """A bind-mounted view's new contents, in the same inode and never seen empty (paths.overwrite)."""
    target = paths.p(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    paths.overwrite(target, text)


def proc_views(st: dict[str, Any]) -> None:
    write_in_place(f"{PROC}/cmdline", st["kernel"]["cmdline"] + "\n")
    host_mem = paths.read("/proc/meminfo") if paths.in_node() else ""
    if host_mem and not paths.p(f"{PROC}/meminfo.host").exists():
        write_in_place(f"{PROC}/meminfo.host", host_mem)
    write_in_place(f"{PROC}/meminfo", meminfo(st, real_proc("meminfo") or host_mem))
    if paths.in_node() and not paths.p(kmod.HOST_MODULES).exists():
        write_in_place(kmod.HOST_MODULES, paths.read("/proc/modules"))
    kmod.sync_views(st)
    for name in ("cmdline", "meminfo", "modules"):
        mounts.bind_file(f"{PROC}/{name}", f"/proc/{name}")
    # A real kernel draws a new boot_id at every boot; a container shares the host's, so tools that
    # detect a reboot by it (ansible.builtin.reboot) would wait forever. Give each node boot its own.
    write_in_place(f"{PROC}/sys/kernel/random/boot_id", str(uuid.uuid4()) + "\n")
    mounts.bind_file(f"{PROC}/sys/kernel/random/boot_id", "/proc/sys/kernel/random/boot_id")
    for key in sysctl_keys(st):
        real = "/proc/sys/" + key.replace(".", "/")
        if paths.in_node() and not os.path.exists(real):
            continue
        value = S.DEFAULT_SYSCTL.get(key) or (paths.read(real).strip() if paths.in_node() else "0")
        if key == "vm.nr_hugepages":
            value = str(st["kernel"]["hugepages"].get("2048", 0))
        write_in_place(f"{PROC}/sys/{key}", value + "\n")
        mounts.bind_file(f"{PROC}/sys/{key}", real)


# ---- sysctl.d -------------------------------------------------------------------------------------------


def sysctl_settings() -> dict[str, str]:
    """Merged sysctl.d configuration (systemd-sysctl order: later basenames win, /etc overrides /usr/lib)."""
    files: dict[str, str] = {}
    for d in (
        "/usr/lib/sysctl.d",
        "/lib/sysctl.d",
        "/usr/local/lib/sysctl.d",
        "/run/sysctl.d",
        "/etc/sysctl.d",
    ):
        pd = paths.p(d)
        if pd.is_dir():
            for f in pd.glob("*.conf"):
                files[f.name] = str(f)
    ordered = [files[k] for k in sorted(files)]
    if paths.p("/etc/sysctl.conf").is_file():
        ordered.append(str(paths.p("/etc/sysctl.conf")))
    out: dict[str, str] = {}
    for name in ordered:
        with open(name, errors="replace") as fh:
            lines = fh.read().splitlines()
        for line in lines:
            line = line.strip()
            if not line or line[0] in "#;" or "=" not in line:
                continue
            k, v = line.split("=", 1)
            out[k.strip().lstrip("-").replace("/", ".")] = v.strip()
    return out


def sysctl_keys(st: dict[str, Any]) -> list[str]:
    """The simulated /proc/sys keys: the node's recorded ones and today's defaults (a node created before
    a key was simulated gets it at its next boot)."""
    return sorted(set(st["kernel"].get("sysctl_keys", [])) | set(S.DEFAULT_SYSCTL))


def apply_sysctl(st: dict[str, Any]) -> None:
    keys = set(sysctl_keys(st))
    for k, v in sysctl_settings().items():
        if k in keys and paths.p(f"{PROC}/sys/{k}").exists():
            write_in_place(f"{PROC}/sys/{k}", v + "\n")


# ---- the unit ---------------------------------------------------------------------------------------------


def render_views(st: dict[str, Any]) -> None:
    params = sysfs.cmdline_params(st["kernel"]["cmdline"])
    sysfs.render_rdma(st)
    sysfs.render_ecn(st)
    sysfs.render_configfs()
    sysfs.render_cpu(st, params)
    sysfs.render_mm(st, params)


def main(argv: list[str]) -> int:
    if paths.p(BOOTED).exists() and "--force" not in argv:
        return 0
    paths.p(paths.RUN).mkdir(parents=True, exist_ok=True)
    paths.p(klog.KMSG).write_text("")
    if paths.in_node():
        mounts.mount_views()
    with S.locked() as st:
        transition(st)
        klog.log(
            f"Linux version {grub.kernel_release()} (clusterforge lab node {st['node']['name']})", 5, False
        )
        klog.log(f"Command line: {st['kernel']['cmdline']}", 6, False)
        render_views(st)
        proc_views(st)
        gpu = S.driver() is not None
        kmod.load(st, kmod.BOOT_MODULES + (kmod.BOOT_GPU_MODULES if gpu else []))
        wanted = [m for m in kmod.modules_load_d() if kmod.canon(m) in kmod.MODULES and kmod.available(m)]
        kmod.load(st, wanted)
        apply_sysctl(st)
        faults.sync_flags(st)
        for kind in ("xid-79", "ecc-uncorrectable", "row-remap-pending"):
            faults.emit_kernel_lines(st, kind)
        faults.enforce(st)
    paths.p(BOOTED).write_text("")
    return 0
