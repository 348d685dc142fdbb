"""Result types of :func:`clusterforge.hw.nvidia_smi.parse_q` (``nvidia-smi -q``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class EccCounts:
    """One ``ECC Errors`` block (Volatile or Aggregate). ``None`` = not printed or N/A."""

    sram_correctable: int | None
    sram_uncorrectable: int | None  # single line, or Parity + SEC-DED when the driver splits it
    sram_uncorrectable_parity: int | None
    sram_uncorrectable_secded: int | None
    dram_correctable: int | None
    dram_uncorrectable: int | None
    single_bit_total: int | None  # pre-Ampere layout ("Single Bit" / "Double Bit" sub-blocks)
    double_bit_total: int | None
    counters: Mapping[str, int | None]  # every counter as printed ("Single Bit/Device Memory" for nested)


@dataclass(frozen=True)
class RetiredPages:
    single_bit_ecc: int | None
    double_bit_ecc: int | None
    pending: bool | None  # "Pending Page Blacklist" / "Pending Page Retirement"


@dataclass(frozen=True)
class RemappedRows:
    correctable: int | None
    uncorrectable: int | None
    pending: bool | None
    failure_occurred: bool | None
    histogram: Mapping[str, int]  # Max/High/Partial/Low/None -> banks


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    type: str | None
    name: str | None
    used_memory_mib: int | None


@dataclass(frozen=True)
class GpuQ:
    """One ``GPU <bus id>`` section. Fields are ``None`` when the section was not printed (``-d``) or N/A."""

    bus_id: str
    product_name: str | None
    architecture: str | None
    serial: str | None
    uuid: str | None
    vbios_version: str | None
    persistence_mode: str | None
    mig_mode_current: str | None
    mig_mode_pending: str | None
    virtualization_mode: str | None
    ecc_mode_current: str | None
    ecc_mode_pending: str | None
    ecc_volatile: EccCounts | None
    ecc_aggregate: EccCounts | None
    sram_threshold_exceeded: bool | None
    channel_repair_pending: bool | None
    tpc_repair_pending: bool | None
    retired_pages: RetiredPages | None
    remapped_rows: RemappedRows | None
    clock_event_reasons: Mapping[
        str, bool | None
    ]  # "SW Power Cap" -> active? (Clocks Event/Throttle Reasons)
    pcie_gen_current: int | None
    pcie_gen_max: int | None
    pcie_gen_host_max: int | None
    link_width_current: int | None
    link_width_max: int | None
    pcie_replays: int | None
    memory_total_mib: int | None
    performance_state: str | None
    temperature_gpu_c: int | None
    power_draw_w: float | None
    power_draw_instant_w: float | None
    power_limit_w: float | None
    default_power_limit_w: float | None
    max_power_limit_w: float | None
    fabric_state: str | None
    fabric_status: str | None
    processes: tuple[GpuProcess, ...] | None
    fields: Mapping[str, str | None]  # every printed leaf, key path joined with "/"

    @property
    def active_clock_event_reasons(self) -> tuple[str, ...]:
        return tuple(name for name, active in self.clock_event_reasons.items() if active)


@dataclass(frozen=True)
class NvidiaSmiQ:
    timestamp: str
    driver_version: str
    cuda_version: str | None
    attached_gpus: int
    gpus: tuple[GpuQ, ...]

    def gpu(self, bus_id: str) -> GpuQ:
        for gpu in self.gpus:
            if gpu.bus_id.lower() == bus_id.lower():
                return gpu
        raise KeyError(bus_id)
