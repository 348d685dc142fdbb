"""GPU model shared by nvidia-smi, dcgmi and the benchmarks: what each visible GPU reports right now."""

from __future__ import annotations

from typing import Any

from . import perf
from . import state as S

ARCH_NAMES = {"hopper": "Hopper", "ampere": "Ampere", "blackwell": "Blackwell"}
CUDA_FOR_BRANCH = {
    "535": "12.2",
    "550": "12.4",
    "560": "12.6",
    "565": "12.7",
    "570": "12.8",
    "575": "12.9",
    "580": "13.0",
}


class DriverError(Exception):
    """nvidia-smi/NVML cannot talk to the driver; ``rc`` is nvidia-smi's exit status."""

    def __init__(self, message: str, rc: int) -> None:
        super().__init__(message)
        self.rc = rc


NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


def check_driver(st: dict[str, Any], autoload: bool = True) -> dict[str, Any]:
    """The installed driver's info, after nvidia-modprobe-style auto-loading of the kernel module.

    Raises DriverError like nvidia-smi does: no module (rc 9) or module/library version mismatch (rc 18).
    """
    drv = S.driver()
    if drv is None:
        raise DriverError(NO_DRIVER, 9)
    mods = S.modules_loaded(st)
    if "nvidia" not in mods:
        if not autoload:
            raise DriverError(NO_DRIVER, 9)
        from . import kmod  # nvidia-smi runs nvidia-modprobe, which loads the module

        kmod.load(st, ["nvidia"])
    loaded = mods.get("nvidia", {}).get("version")
    if loaded and loaded != drv["version"]:
        raise DriverError(
            "Failed to initialize NVML: Driver/library version mismatch\n"
            f"NVML library version: {'.'.join(drv['version'].split('.')[:2])}\n",
            18,
        )
    return drv


def cuda_init() -> str | None:
    """What cuInit does to the node: the driver must answer, nvidia_uvm gets loaded (nvidia-modprobe -u)."""
    from . import kmod

    with S.locked() as st:
        try:
            check_driver(st)
        except DriverError:
            return "CUDA driver version is insufficient for CUDA runtime version"
        if "nvidia_uvm" not in S.modules_loaded(st):
            kmod.load(st, ["nvidia_uvm"])
    return None


def cuda_version(drv: dict[str, Any]) -> str:
    return str(drv.get("cuda") or CUDA_FOR_BRANCH.get(str(drv["version"]).split(".")[0], "12.8"))


def fabric(st: dict[str, Any], g: dict[str, Any]) -> tuple[str, str]:
    if not st["sku"]["gpu"]["nvswitch"]:
        return "N/A", "N/A"
    state = g.get("fabric", "In Progress")
    return state, ("Success" if state == "Completed" else "N/A")


def fabric_ready(st: dict[str, Any]) -> bool:
    """CUDA refuses to start on an NVSwitch system until the fabric manager has configured it."""
    return all(fabric(st, g)[0] in ("Completed", "N/A") for g in S.visible_gpus(st))


def persistence(st: dict[str, Any], g: dict[str, Any]) -> bool:
    return bool(g.get("persistence"))


def slow(st: dict[str, Any], g: dict[str, Any]) -> bool:
    return perf.gpu_factor(st, g["index"]) < 1.0


def pcie_width(st: dict[str, Any], g: dict[str, Any]) -> int:
    width = int(st["sku"]["gpu"]["pcie"]["width"])
    return width // 2 if slow(st, g) else width  # a slow GPU is a downtrained link


def clock_reasons(st: dict[str, Any], g: dict[str, Any]) -> int:
    return 0x8 if slow(st, g) else 0x1  # HW slowdown / GPU idle


def ecc_counts(st: dict[str, Any], g: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Volatile (since boot) and aggregate (lifetime) ECC counters, faults included."""
    n = len(st["gpus"])
    vol = {"sram_correctable": 0, "sram_uncorrectable": 0, "dram_correctable": 0, "dram_uncorrectable": 0}
    agg = {k: int(g.get("aggregate", {}).get(k, 0)) for k in vol}
    if g["index"] in S.targets(st, "ecc-uncorrectable", "gpu", n):
        count = int((S.fault(st, "ecc-uncorrectable") or {}).get("count", 2))
        vol["dram_uncorrectable"] += count
        agg["dram_uncorrectable"] += count
    if g["index"] in S.targets(st, "row-remap-pending", "gpu", n):
        vol["dram_correctable"] += 1
        agg["dram_correctable"] += 1
    return {"volatile": vol, "aggregate": agg}


def remapped(st: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    n = len(st["gpus"])
    rr = g.get("remap", {})
    out: dict[str, Any] = {
        "correctable": int(rr.get("correctable", 0)),
        "uncorrectable": int(rr.get("uncorrectable", 0)),
        "pending": False,
        "failure": False,
    }
    if g["index"] in S.targets(st, "row-remap-pending", "gpu", n):
        out["correctable"] += 1
        out["pending"] = True
    if g["index"] in S.targets(st, "ecc-uncorrectable", "gpu", n):
        out["uncorrectable"] += 1
        out["pending"] = True
    banks = 640 if st["sku"]["gpu"]["architecture"] == "ampere" else 2560
    used = out["correctable"] + out["uncorrectable"]
    out["histogram"] = {"Max": banks - used, "High": used, "Partial": 0, "Low": 0, "None": 0}
    return out


def temperature(st: dict[str, Any], g: dict[str, Any]) -> int:
    return 28 + (g["index"] * 3) % 7


def power_draw(st: dict[str, Any], g: dict[str, Any]) -> float:
    return round(st["sku"]["gpu"]["power_limit_w"] * 0.1 + g["index"] * 0.73, 2)


def bus_short(g: dict[str, Any]) -> str:
    """``00000000:19:00.0`` -> ``0000:19:00`` (NCCL/dmesg style)."""
    return g["bus_id"][4:-2].lower()


def numa_of(st: dict[str, Any], gpu_index: int) -> int:
    for r in st["sku"]["compute_nics"]["rails"]:
        if r["gpu"] == gpu_index:
            return int(r["numa"])
    nn = int(st["sku"]["cpu"]["numa_nodes"])
    return gpu_index * nn // max(1, int(st["sku"]["gpu"]["count"]))


def cpu_affinity(st: dict[str, Any], numa: int) -> str:
    """Linux CPU list of one NUMA node (cores first, then their hyperthread siblings)."""
    cpu = st["sku"]["cpu"]
    cores = int(cpu["sockets"]) * int(cpu["cores_per_socket"])
    per = cores // int(cpu["numa_nodes"])
    lo, hi = numa * per, (numa + 1) * per - 1
    return f"{lo}-{hi},{lo + cores}-{hi + cores}"
