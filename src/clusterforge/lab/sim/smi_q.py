"""``nvidia-smi -q`` rendered in the real layout (535/550/570 drivers; key column 42 characters)."""

from __future__ import annotations

import time
from typing import Any

from . import gpu as G
from . import state as S


def _kv(depth: int, key: str, value: object) -> str:
    return f"{'    ' * depth}{key}".ljust(42) + f": {value}"


def _hdr(depth: int, key: str) -> str:
    return f"{'    ' * depth}{key}"


def _on(flag: bool, on: str = "Enabled", off: str = "Disabled") -> str:
    return on if flag else off


def _ecc_block(arch: str, counts: dict[str, int], depth: int, threshold: bool) -> list[str]:
    if arch == "ampere":
        out = [
            _kv(depth, "SRAM Correctable", counts["sram_correctable"]),
            _kv(depth, "SRAM Uncorrectable", counts["sram_uncorrectable"]),
        ]
    else:
        out = [
            _kv(depth, "SRAM Correctable", counts["sram_correctable"]),
            _kv(depth, "SRAM Uncorrectable Parity", counts["sram_uncorrectable"]),
            _kv(depth, "SRAM Uncorrectable SEC-DED", 0),
        ]
    out += [
        _kv(depth, "DRAM Correctable", counts["dram_correctable"]),
        _kv(depth, "DRAM Uncorrectable", counts["dram_uncorrectable"]),
    ]
    if threshold and arch != "ampere":
        out.append(_kv(depth, "SRAM Threshold Exceeded", "No"))
    return out


def gpu_section(st: dict[str, Any], g: dict[str, Any], minor: int, sections: set[str] | None) -> list[str]:
    sku_gpu = st["sku"]["gpu"]
    arch = sku_gpu["architecture"]
    bus = int(g["bus_id"].split(":")[1], 16)

    def want(*names: str) -> bool:
        return sections is None or any(n in sections for n in names)

    out = [f"GPU {g['bus_id']}"]
    if sections is None:
        mig = g["mig"]
        out += [
            _kv(1, "Product Name", sku_gpu["model"]),
            _kv(1, "Product Brand", "NVIDIA"),
            _kv(1, "Product Architecture", G.ARCH_NAMES.get(arch, arch.title())),
            _kv(1, "Display Mode", "Disabled"),
            _kv(1, "Display Active", "Disabled"),
            _kv(1, "Persistence Mode", _on(G.persistence(st, g))),
            _kv(1, "Addressing Mode", "None"),
            _hdr(1, "MIG Mode"),
            _kv(2, "Current", _on(mig["current"])),
            _kv(2, "Pending", _on(mig["pending"])),
            _kv(1, "Accounting Mode", "Disabled"),
            _kv(1, "Accounting Mode Buffer Size", 4000),
            _hdr(1, "Driver Model"),
            _kv(2, "Current", "N/A"),
            _kv(2, "Pending", "N/A"),
            _kv(1, "Serial Number", g["serial"]),
            _kv(1, "GPU UUID", g["uuid"]),
            _kv(1, "Minor Number", minor),
            _kv(1, "VBIOS Version", g["vbios"]),
            _kv(1, "MultiGPU Board", "No"),
            _kv(1, "Board ID", f"0x{bus:x}00"),
            _kv(1, "Board Part Number", "692-2G520-0200-000"),
            _kv(1, "GPU Part Number", f"{S.gpu_device_id(sku_gpu['model'])}-885-A1"),
            _kv(1, "FRU Part Number", "N/A"),
            _kv(1, "Module ID", g["module_id"]),
            _hdr(1, "Inforom Version"),
            _kv(2, "Image Version", "G520.0200.00.05"),
            _kv(2, "OEM Object", "2.1"),
            _kv(2, "ECC Object", "7.16"),
            _kv(2, "Power Management Object", "N/A"),
            _hdr(1, "GPU Operation Mode"),
            _kv(2, "Current", "N/A"),
            _kv(2, "Pending", "N/A"),
            _kv(1, "GSP Firmware Version", st.get("_driver_version", "N/A")),
            _hdr(1, "GPU Virtualization Mode"),
            _kv(2, "Virtualization Mode", "None"),
            _kv(2, "Host VGPU Mode", "N/A"),
            _hdr(1, "GPU Reset Status"),
            _kv(2, "Reset Required", "Yes" if g["ecc"]["pending"] != g["ecc"]["current"] else "No"),
            _kv(2, "Drain and Reset Recommended", "No"),
            _hdr(1, "IBMNPU"),
            _kv(2, "Relaxed Ordering Mode", "N/A"),
            _hdr(1, "PCI"),
            _kv(2, "Bus", f"0x{bus:02X}"),
            _kv(2, "Device", "0x00"),
            _kv(2, "Domain", "0x0000"),
            _kv(2, "Device Id", f"0x{S.gpu_device_id(sku_gpu['model'])}10DE"),
            _kv(2, "Bus Id", g["bus_id"]),
            _kv(2, "Sub System Id", "0x16C110DE"),
            _hdr(2, "GPU Link Info"),
            _hdr(3, "PCIe Generation"),
            _kv(4, "Max", sku_gpu["pcie"]["generation"]),
            _kv(4, "Current", sku_gpu["pcie"]["generation"]),
            _kv(4, "Device Current", sku_gpu["pcie"]["generation"]),
            _kv(4, "Device Max", sku_gpu["pcie"]["generation"]),
            _kv(4, "Host Max", sku_gpu["pcie"]["generation"]),
            _hdr(3, "Link Width"),
            _kv(4, "Max", f"{sku_gpu['pcie']['width']}x"),
            _kv(4, "Current", f"{G.pcie_width(st, g)}x"),
            _hdr(2, "Bridge Chip"),
            _kv(3, "Type", "N/A"),
            _kv(3, "Firmware", "N/A"),
            _kv(2, "Replays Since Reset", 0),
            _kv(2, "Replay Number Rollovers", 0),
            _kv(2, "Tx Throughput", "0 KB/s"),
            _kv(2, "Rx Throughput", "0 KB/s"),
            _kv(1, "Fan Speed", "N/A"),
        ]
    if want("PERFORMANCE"):
        reasons = G.clock_reasons(st, g)
        act = lambda bit: "Active" if reasons & bit else "Not Active"  # noqa: E731
        out += [
            _kv(1, "Performance State", "P0"),
            _hdr(1, "Clocks Event Reasons"),
            _kv(2, "Idle", act(0x1)),
            _kv(2, "Applications Clocks Setting", act(0x2)),
            _kv(2, "SW Power Cap", act(0x4)),
            _kv(2, "HW Slowdown", act(0x8)),
            _kv(3, "HW Thermal Slowdown", act(0x40)),
            _kv(3, "HW Power Brake Slowdown", act(0x80)),
            _kv(2, "Sync Boost", act(0x10)),
            _kv(2, "SW Thermal Slowdown", act(0x20)),
            _kv(2, "Display Clock Setting", act(0x100)),
        ]
    if want("MEMORY"):
        total = int(sku_gpu["memory_mib"])
        out += [
            _hdr(1, "FB Memory Usage"),
            _kv(2, "Total", f"{total} MiB"),
            _kv(2, "Reserved", "551 MiB"),
            _kv(2, "Used", "0 MiB"),
            _kv(2, "Free", f"{total - 551} MiB"),
            _hdr(1, "BAR1 Memory Usage"),
            _kv(2, "Total", "131072 MiB"),
            _kv(2, "Used", "1 MiB"),
            _kv(2, "Free", "131071 MiB"),
        ]
    if sections is None:
        out += [
            _kv(1, "Compute Mode", "Default"),
            _hdr(1, "Utilization"),
            _kv(2, "Gpu", "0 %"),
            _kv(2, "Memory", "0 %"),
            _kv(2, "Encoder", "0 %"),
            _kv(2, "Decoder", "0 %"),
        ]
    if want("ECC"):
        counts = G.ecc_counts(st, g)
        out += [
            _hdr(1, "ECC Mode"),
            _kv(2, "Current", _on(g["ecc"]["current"])),
            _kv(2, "Pending", _on(g["ecc"]["pending"])),
            _hdr(1, "ECC Errors"),
            _hdr(2, "Volatile"),
        ]
        out += _ecc_block(arch, counts["volatile"], 3, False)
        out += [_hdr(2, "Aggregate"), *_ecc_block(arch, counts["aggregate"], 3, True)]
    if want("PAGE_RETIREMENT"):
        out += [
            _hdr(1, "Retired Pages"),
            _kv(2, "Single Bit ECC", "N/A"),
            _kv(2, "Double Bit ECC", "N/A"),
            _kv(2, "Pending Page Blacklist", "N/A"),
        ]
    if want("ROW_REMAPPER"):
        rr = G.remapped(st, g)
        out += [
            _hdr(1, "Remapped Rows"),
            _kv(2, "Correctable Error", rr["correctable"]),
            _kv(2, "Uncorrectable Error", rr["uncorrectable"]),
            _kv(2, "Pending", "Yes" if rr["pending"] else "No"),
            _kv(2, "Remapping Failure Occurred", "Yes" if rr["failure"] else "No"),
            _hdr(2, "Bank Remap Availability Histogram"),
        ]
        out += [_kv(3, k, f"{v} bank(s)") for k, v in rr["histogram"].items()]
    if want("TEMPERATURE"):
        out += [
            _hdr(1, "Temperature"),
            _kv(2, "GPU Current Temp", f"{G.temperature(st, g)} C"),
            _kv(2, "GPU T.Limit Temp", "56 C"),
            _kv(2, "GPU Shutdown T.Limit Temp", "-8 C"),
            _kv(2, "GPU Slowdown T.Limit Temp", "-2 C"),
            _kv(2, "GPU Max Operating T.Limit Temp", "0 C"),
            _kv(2, "GPU Target Temperature", "N/A"),
            _kv(2, "Memory Current Temp", "39 C"),
            _kv(2, "Memory Max Operating T.Limit Temp", "0 C"),
        ]
    if want("POWER"):
        lim = f"{float(sku_gpu['power_limit_w']):.2f} W"
        out += [
            _hdr(1, "GPU Power Readings"),
            _kv(2, "Power Draw", f"{G.power_draw(st, g):.2f} W"),
            _kv(2, "Current Power Limit", lim),
            _kv(2, "Requested Power Limit", lim),
            _kv(2, "Default Power Limit", lim),
            _kv(2, "Min Power Limit", "200.00 W"),
            _kv(2, "Max Power Limit", lim),
        ]
    if want("CLOCK"):
        out += [
            _hdr(1, "Clocks"),
            _kv(2, "Graphics", "345 MHz"),
            _kv(2, "SM", "345 MHz"),
            _kv(2, "Memory", "2619 MHz"),
            _kv(2, "Video", "765 MHz"),
            _hdr(1, "Max Clocks"),
            _kv(2, "Graphics", "1980 MHz"),
            _kv(2, "SM", "1980 MHz"),
            _kv(2, "Memory", "2619 MHz"),
            _kv(2, "Video", "1545 MHz"),
        ]
    if sections is None:
        state_, status = G.fabric(st, g)
        out += [
            _hdr(1, "Fabric"),
            _kv(2, "State", state_),
            _kv(2, "Status", status),
            _kv(1, "Processes", "None"),
        ]
    return out


def render(
    st: dict[str, Any], drv: dict[str, Any], select: list[int] | None = None, sections: set[str] | None = None
) -> str:
    """The whole report. ``select``: nvidia-smi indices (-i); ``sections``: -d names (upper case)."""
    gpus = S.visible_gpus(st)
    st = {**st, "_driver_version": drv["version"]}
    lines = [
        "",
        "==============NVSMI LOG==============",
        "",
        _kv(0, "Timestamp", time.asctime()),
        _kv(0, "Driver Version", drv["version"]),
        _kv(0, "CUDA Version", G.cuda_version(drv)),
        "",
        _kv(0, "Attached GPUs", len(gpus)),
    ]
    for idx, g in enumerate(gpus):
        if select is not None and idx not in select:
            continue
        lines += gpu_section(st, g, idx, sections)
        lines.append("")
    return "\n".join(lines) + "\n"
