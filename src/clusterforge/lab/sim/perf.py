"""Measured figures: nominal (from the SKU and real captures) x fault factors x seeded noise.

Nothing is timed: the printed bandwidths and latencies are rendered. The noise seed is derived from the
node name, the node's run counter and what is being measured, so repeated runs differ but a test can
reproduce one. Nominal values come from real captures (tests/fixtures/real, shared/reference) and are kept
comfortably above the SKU floors; see NOMINAL_SOURCES and docs/simulator.md.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from . import state as S

# nominal figures per GPU model keyword (first match wins): (allreduce busbw GB/s, h2d, d2h, d2d read CE)
_GPU_NOMINAL: list[tuple[str, dict[str, float]]] = [
    ("H200", {"allreduce": 480.0, "d2d": 372.0}),
    ("H100", {"allreduce": 480.0, "d2d": 371.0}),
    ("A100", {"allreduce": 238.0, "d2d": 276.0}),
    ("B200", {"allreduce": 760.0, "d2d": 780.0}),
]
_PCIE_NOMINAL = {5: (55.2, 55.0), 4: (26.0, 26.0), 3: (12.8, 12.9)}  # (h2d, d2h) GB/s per GPU
NOMINAL_SOURCES = {
    "allreduce H100": "nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1 (479.93 GB/s at 8 GiB)",
    "allreduce H200": "tuning-facts 6.2: stas00 8xH200 NVLS 480.0 GB/s",
    "allreduce A100": "tuning-facts 6.2: AzImg test-nccl.sh 'should be above 235 GB/s'; 238 used",
    "allreduce B200": "tuning-facts 6.2: stas00 8xB200 740.6 @4GiB / 845.7 @16GiB; 760 used",
    "d2d H100": "nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1 (370.9 GB/s)",
    "d2d A100": "nvbandwidth__2gpu-v0.10-azurenhc-testdata__2 (276.1 GB/s)",
    "d2d B200": "derived: 0.87 x 900 GB/s NVLink5 unidirectional",
    "h2d/d2h Gen5": "tuning-facts 6.2: measured H100 H2D 54.8 GB/s; Gen5 x16 ~63 GB/s theory",
    "h2d/d2h Gen4": "nvbandwidth__2gpu-v0.10-azurenhc-testdata__2 (26.03/25.97 GB/s)",
    "ib_write_bw 200G": "ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3: 23317 MiB/s",
    "ib_write_bw 400G": "derived: 98.5% of line rate (NDR reaches more than the HDR VM capture): 394 Gb/s",
    "hbm": "tuning-facts 6.2: H100 D2D copy 2903 GB/s = 86.7% of 3350",
}
BASE_SIGMA = 0.004  # 0.4 %: repeat runs of a healthy node differ by a few tenths of a percent
NOISY_SIGMA = 0.015


def gpu_nominal(sku: dict[str, Any]) -> dict[str, float]:
    g = sku["gpu"]
    thr = sku["thresholds"]
    base: dict[str, float] = {}
    for key, vals in _GPU_NOMINAL:
        if key in g["model"]:
            base = dict(vals)
            break
    h2d, d2h = _PCIE_NOMINAL.get(int(g["pcie"]["generation"]), (55.2, 55.0))
    base.setdefault("allreduce", thr["allreduce_busbw_gbs"]["value"] * 1.05)
    base.setdefault("d2d", thr["d2d_gbs"]["value"] * 1.1)
    base |= {"h2d": h2d, "d2h": d2h, "hbm": g["hbm_bandwidth_gbs"] * 0.867}
    # never closer than 3 % to a floor: a healthy node must pass (docs/simulator.md, "Measurements")
    for key, thr_key in (
        ("allreduce", "allreduce_busbw_gbs"),
        ("h2d", "h2d_gbs"),
        ("d2h", "d2h_gbs"),
        ("d2d", "d2d_gbs"),
        ("hbm", "hbm_bandwidth_gbs"),
    ):
        base[key] = max(base[key], thr[thr_key]["value"] * 1.03)
    return base


def nic_nominal_gbps(sku: dict[str, Any], rate_gbps: int) -> float:
    floor = float(sku["thresholds"]["ib_write_bw_gbps"]["value"])
    nominal = rate_gbps * (0.985 if rate_gbps >= 400 else 0.978)
    if rate_gbps >= int(sku["compute_nics"]["speed_gbps"]):
        nominal = max(nominal, floor * 1.03)
    return nominal


def nic_latency_us(link_layer: str, rate_gbps: int) -> float:
    base = 1.02 if link_layer == "InfiniBand" else 1.62
    return base if rate_gbps >= 400 else base + 0.07


class Noise:
    """Seeded multiplicative noise for one tool run."""

    def __init__(self, st: dict[str, Any], run: int, tool: str) -> None:
        seed = hashlib.sha256(f"{st['node']['name']}:{run}:{tool}".encode()).digest()
        self.rng = random.Random(seed)
        self.noisy = S.fault(st, "noisy") is not None
        scale = float((S.fault(st, "noisy") or {}).get("scale", NOISY_SIGMA / BASE_SIGMA))
        self.sigma = BASE_SIGMA * (scale if self.noisy else 1.0)

    def factor(self, nominal: float, floor: float | None = None) -> float:
        """A noise factor around 1; never takes nominal below 75 % of its margin over ``floor``."""
        x = self.rng.gauss(0.0, self.sigma)
        if floor is not None and nominal > 0:
            margin = max(0.0, 1.0 - floor / nominal)
            x = max(x, -0.75 * margin)
        return 1.0 + min(x, 3 * self.sigma)

    def value(self, nominal: float, floor: float | None = None) -> float:
        return nominal * self.factor(nominal, floor)

    def jitter(self, rel: float) -> float:
        return 1.0 + self.rng.uniform(-rel, rel) * (3 if self.noisy else 1)


def gpu_factor(st: dict[str, Any], gpu_index: int) -> float:
    """Copy/bus bandwidth factor of one GPU (slow-gpu fault)."""
    if gpu_index in S.targets(st, "slow-gpu", "gpu", len(st["gpus"])):
        return float((S.fault(st, "slow-gpu") or {}).get("factor", 0.6))
    return 1.0


def nic_factor(st: dict[str, Any], nic: dict[str, Any]) -> float:
    f = 1.0
    if nic["rail"] in S.targets(st, "slow-nic", "rail", len(st["nics"])):
        f *= float((S.fault(st, "slow-nic") or {}).get("factor", 0.7))
    if (
        nic["rail"] in S.targets(st, "mtu-reverted", "rail", len(st["nics"]))
        and S.link_layer(nic) == "Ethernet"
    ):
        f *= 0.9  # RoCE with a 1024-byte path MTU
    return f
