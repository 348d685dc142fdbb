"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` and ``--query-remapped-rows``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import gpu as G
from . import state as S

ALIASES = {
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_serial": "serial",
    "gpu_uuid": "uuid",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "clocks.sm": "clocks.current.sm",
    "clocks.gr": "clocks.current.graphics",
    "clocks.mem": "clocks.current.memory",
    "gom.current": "gpu_operation_mode.current",
    "power.limit": "power.limit",
}
NA = "[N/A]"


class BadField(Exception):
    pass


def _onoff(flag: bool) -> str:
    return "Enabled" if flag else "Disabled"


def _ecc_field(st: dict[str, Any], g: dict[str, Any], name: str) -> str:
    # ecc.errors.(corrected|uncorrected).(volatile|aggregate).(sram|dram|total|<legacy>)
    parts = name.split(".")
    if (
        len(parts) != 5
        or parts[2] not in ("corrected", "uncorrected")
        or parts[3] not in ("volatile", "aggregate")
    ):
        raise BadField(name)
    counts = G.ecc_counts(st, g)[parts[3]]
    kind = "correctable" if parts[2] == "corrected" else "uncorrectable"
    if parts[4] in ("sram", "dram"):
        return str(counts[f"{parts[4]}_{kind}"])
    if parts[4] == "total":
        return str(counts[f"sram_{kind}"] + counts[f"dram_{kind}"])
    if parts[4] in (
        "device_memory",
        "dram_correctable",
        "register_file",
        "l1_cache",
        "l2_cache",
        "texture_memory",
        "texture_shm",
        "cbu",
        "sram_parity",
        "sram_sec_ded",
    ):
        return NA
    raise BadField(name)


def _fields(
    st: dict[str, Any],
    drv: dict[str, Any],
    g: dict[str, Any],
    idx: int,
    count: int,
) -> dict[str, tuple[Callable[[], str], str | None]]:
    sku = st["sku"]["gpu"]
    rr = lambda: G.remapped(st, g)  # noqa: E731
    fab = G.fabric(st, g)
    gen = str(sku["pcie"]["generation"])
    lim = f"{float(sku['power_limit_w']):.2f}"
    mig_capable = sku["architecture"] in ("ampere", "hopper", "blackwell")
    total = int(sku["memory_mib"])
    return {
        "timestamp": (lambda: time.strftime("%Y/%m/%d %H:%M:%S.000"), None),
        "driver_version": (lambda: drv["version"], None),
        "count": (lambda: str(count), None),
        "index": (lambda: str(idx), None),
        "name": (lambda: sku["model"], None),
        "serial": (lambda: g["serial"], None),
        "uuid": (lambda: g["uuid"], None),
        "vbios_version": (lambda: g["vbios"], None),
        "module_id": (lambda: str(g["module_id"]), None),
        "pci.bus_id": (lambda: g["bus_id"], None),
        "pci.domain": (lambda: "0x0000", None),
        "pci.bus": (lambda: "0x" + g["bus_id"].split(":")[1], None),
        "pci.device": (lambda: "0x00", None),
        "pci.device_id": (lambda: f"0x{S.gpu_device_id(sku['model'])}10DE", None),
        "pci.sub_device_id": (lambda: "0x16C110DE", None),
        "persistence_mode": (lambda: _onoff(G.persistence(st, g)), None),
        "display_mode": (lambda: "Disabled", None),
        "compute_mode": (lambda: "Default", None),
        "pstate": (lambda: "P0", None),
        "ecc.mode.current": (lambda: _onoff(g["ecc"]["current"]), None),
        "ecc.mode.pending": (lambda: _onoff(g["ecc"]["pending"]), None),
        "mig.mode.current": (lambda: _onoff(g["mig"]["current"]) if mig_capable else NA, None),
        "mig.mode.pending": (lambda: _onoff(g["mig"]["pending"]) if mig_capable else NA, None),
        "memory.total": (lambda: str(total), "MiB"),
        "memory.reserved": (lambda: "551", "MiB"),
        "memory.used": (lambda: "0", "MiB"),
        "memory.free": (lambda: str(total - 551), "MiB"),
        "pcie.link.gen.current": (lambda: gen, None),
        "pcie.link.gen.gpucurrent": (lambda: gen, None),
        "pcie.link.gen.max": (lambda: gen, None),
        "pcie.link.gen.gpumax": (lambda: gen, None),
        "pcie.link.gen.hostmax": (lambda: gen, None),
        "pcie.link.width.current": (lambda: str(G.pcie_width(st, g)), None),
        "pcie.link.width.max": (lambda: str(sku["pcie"]["width"]), None),
        "clocks_event_reasons.active": (lambda: f"0x{G.clock_reasons(st, g):016X}", None),
        "fabric.state": (lambda: fab[0] if fab[0] != "N/A" else NA, None),
        "fabric.status": (lambda: fab[1] if fab[1] != "N/A" else NA, None),
        "remapped_rows.correctable": (lambda: str(rr()["correctable"]), None),
        "remapped_rows.uncorrectable": (lambda: str(rr()["uncorrectable"]), None),
        "remapped_rows.pending": (lambda: "Yes" if rr()["pending"] else "No", None),
        "remapped_rows.failure": (lambda: "Yes" if rr()["failure"] else "No", None),
        "retired_pages.single_bit_ecc.count": (lambda: NA, None),
        "retired_pages.double_bit.count": (lambda: NA, None),
        "retired_pages.pending": (lambda: NA, None),
        "temperature.gpu": (lambda: str(G.temperature(st, g)), None),
        "temperature.memory": (lambda: "39", None),
        "power.draw": (lambda: f"{G.power_draw(st, g):.2f}", "W"),
        "power.limit": (lambda: lim, "W"),
        "enforced.power.limit": (lambda: lim, "W"),
        "power.default_limit": (lambda: lim, "W"),
        "power.max_limit": (lambda: lim, "W"),
        "clocks.current.sm": (lambda: "345", "MHz"),
        "clocks.current.graphics": (lambda: "345", "MHz"),
        "clocks.current.memory": (lambda: "2619", "MHz"),
        "clocks.max.sm": (lambda: "1980", "MHz"),
        "clocks.max.memory": (lambda: "2619", "MHz"),
        "utilization.gpu": (lambda: "0", "%"),
        "utilization.memory": (lambda: "0", "%"),
        "gpu_operation_mode.current": (lambda: NA, None),
    }


def _fmt(value: str, unit: str | None, nounits: bool) -> str:
    if unit is None or nounits or value == NA:
        return value
    return f"{value} {unit}" if unit != "%" else f"{value} %"


def render(
    st: dict[str, Any],
    drv: dict[str, Any],
    fields: list[str],
    fmt: set[str],
    select: list[int] | None = None,
    remapped_rows: bool = False,
) -> tuple[str, int]:
    """CSV output and exit status (2 for an unknown field, like nvidia-smi)."""
    names = [f.strip() for f in fields if f.strip()]
    gpus = S.visible_gpus(st)
    rows: list[str] = []
    header: list[str] = []
    for idx, g in enumerate(gpus):
        if select is not None and idx not in select:
            continue
        table = _fields(st, drv, g, idx, len(gpus))
        cells = []
        for name in names:
            canon = ALIASES.get(name.lower(), name.lower())
            try:
                if canon.startswith("ecc.errors."):
                    value, unit = _ecc_field(st, g, canon), None
                elif canon in table:
                    fn, unit = table[canon]
                    value = fn()
                else:
                    raise BadField(name)
            except BadField:
                return f'Field "{name}" is not a valid field to query.\n\n', 2
            if remapped_rows and canon.startswith("remapped_rows.") and value in ("Yes", "No"):
                value = "1" if value == "Yes" else "0"
            cells.append(_fmt(value, unit, "nounits" in fmt))
            if len(header) < len(names):
                header.append(name if unit is None or "nounits" in fmt else f"{name} [{unit}]")
        rows.append(", ".join(cells))
    out = []
    if "noheader" not in fmt:
        if not header:
            header = list(names)
        out.append(", ".join(header))
    out += rows
    return "\n".join(out) + "\n", 0
