"""``nvidia-smi topo -m``, ``nvlink -s``/``-e``, ``-L`` and the default summary table."""

from __future__ import annotations

import time
from typing import Any

from . import gpu as G
from . import state as S

LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def topo(st: dict[str, Any]) -> str:
    gpus = S.visible_gpus(st)
    nics = st["nics"]
    link = st["sku"]["gpu"]["nvlink"]["topo_link"]
    gnuma = {g["index"]: G.numa_of(st, g["index"]) for g in gpus}
    cols = [f"GPU{i}" for i in range(len(gpus))] + [f"NIC{i}" for i in range(len(nics))]
    lines = ["\t" + "\t".join(cols) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]

    def gpu_nic(g: dict[str, Any], n: dict[str, Any]) -> str:
        if n["gpu"] == g["index"]:
            return str(n.get("gpu_link", "PIX"))
        return "NODE" if n["numa"] == gnuma[g["index"]] else "SYS"

    for i, g in enumerate(gpus):
        cells = [" X " if j == i else link for j in range(len(gpus))]
        cells += [gpu_nic(g, n) for n in nics]
        numa = gnuma[g["index"]]
        cells += [G.cpu_affinity(st, numa), str(numa), "", "N/A"]
        lines.append(f"GPU{i}\t" + "\t".join(cells))
    for i, n in enumerate(nics):
        cells = [gpu_nic(g, n) for g in gpus]
        cells += [
            " X " if j == i else ("NODE" if m["numa"] == n["numa"] else "SYS") for j, m in enumerate(nics)
        ]
        lines.append(f"NIC{i}\t" + "\t".join(cells) + "\t\t\t\t")
    out = "\n".join(lines) + "\n" + LEGEND
    if nics:
        out += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {n['hca']}\n" for i, n in enumerate(nics))
    return out + "\n"


def _gpu_line(st: dict[str, Any], idx: int, g: dict[str, Any]) -> str:
    return f"GPU {idx}: {st['sku']['gpu']['model']} (UUID: {g['uuid']})"


def nvlink_status(st: dict[str, Any], select: list[int] | None) -> str:
    nv = st["sku"]["gpu"]["nvlink"]
    out = []
    for idx, g in enumerate(S.visible_gpus(st)):
        if select is not None and idx not in select:
            continue
        out.append(_gpu_line(st, idx, g))
        if nv["links_per_gpu"] == 0:
            out.append("NVML: Unable to retrieve NVLink information as all links are inactive")
            continue
        out += [f"\t Link {k}: {nv['link_speed_gbs']:g} GB/s" for k in range(nv["links_per_gpu"])]
    return "\n".join(out) + "\n"


def nvlink_errors(st: dict[str, Any], select: list[int] | None) -> str:
    nv = st["sku"]["gpu"]["nvlink"]
    out = []
    for idx, g in enumerate(S.visible_gpus(st)):
        if select is not None and idx not in select:
            continue
        out.append(_gpu_line(st, idx, g))
        for k in range(nv["links_per_gpu"]):
            out += [
                f"\t Link {k}: Replay Errors: 0",
                f"\t Link {k}: Recovery Errors: 0",
                f"\t Link {k}: CRC Errors: 0",
                "",
            ]
    return "\n".join(out) + "\n"


def listing(st: dict[str, Any]) -> str:
    return "".join(_gpu_line(st, i, g) + "\n" for i, g in enumerate(S.visible_gpus(st)))


def summary(st: dict[str, Any], drv: dict[str, Any]) -> str:
    """The default ``nvidia-smi`` table (for humans; validators use -q / --query-gpu)."""
    sku = st["sku"]["gpu"]
    bar = "+-----------------------------------------------------------------------------------------+"
    mid = "|-----------------------------------------+------------------------+----------------------+"
    lines = [
        time.asctime(),
        bar,
        f"| NVIDIA-SMI {drv['version']:<22} Driver Version: {drv['version']:<14} "
        f"CUDA Version: {G.cuda_version(drv):<9}|",
        mid,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for idx, g in enumerate(S.visible_gpus(st)):
        pm = "On" if G.persistence(st, g) else "Off"
        unc = G.ecc_counts(st, g)["volatile"]["dram_uncorrectable"]
        mig = "Enabled" if g["mig"]["current"] else "Disabled"
        lines += [
            f"| {idx:>3}  {sku['model'][:20]:<20} {pm:>15} | {g['bus_id']:>16} Off | {unc:>20} |",
            f"| N/A   {G.temperature(st, g):>2}C    P0 {G.power_draw(st, g):>12.0f}W / "
            f"{sku['power_limit_w']:>4}W |"
            f" {0:>8}MiB / {sku['memory_mib']:>6}MiB | {0:>7}%      Default |",
            f"|                                         |                        | {mig:>20} |",
            mid if idx < len(S.visible_gpus(st)) - 1 else bar.replace("-", "-"),
        ]
    lines += [
        "",
        bar,
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
        "|  No running processes found                                                             |",
        bar,
    ]
    return "\n".join(lines) + "\n"
