"""The `monitoring` part of a node's desired state: exporters, the textfile collector, the health check.

One source for the exporters role (ports, packages, textfile directory), the slurm_node role and the
systemd timer (the health check's path, interval and config), the lab's Prometheus config
(`monitoring.prometheus`) and the node-side check itself (`clusterforge.health.nodecheck` reads the
`health` dict as its config file): what it checks on this node (GPU count, the rails' netdevs, the fabric
manager on NVSwitch SKUs). The checks' actions and repeat-offender rules are the registry's, read by the
health check from the node checker it is a mode of (`checker.path`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NODE_EXPORTER_PORT = 9100  # prometheus-node-exporter's default port
DCGM_EXPORTER_PORT = 9400  # dcgm-exporter's default port
# NVIDIA's package of dcgm-exporter in its CUDA repositories, paired with the DCGM 4 core
DCGM_EXPORTER_PACKAGE = "datacenter-gpu-manager-exporter"
DCGM_EXPORTER_SERVICE = "nvidia-dcgm-exporter"
DCGM_EXPORTER_COUNTERS = "/etc/dcgm-exporter/clusterforge-counters.csv"
# Debian's prometheus-node-exporter reads ARGS from /etc/default and collects *.prom from this directory
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
HEALTH_PATH = "/usr/local/sbin/clusterforge-healthcheck"
HEALTH_CONFIG = "/etc/clusterforge/healthcheck.json"
HEALTH_STATE_DIR = "/var/lib/clusterforge/health"
# the node checker (the validators as one program, clusterforge.remote.checker_bundle): a Slurm job step runs
# it on every node (clusterforge certify --via slurm)
CHECKER_PATH = "/usr/local/lib/clusterforge/clusterforge-checker.pyz"
HEALTH_BUDGET_S = 1.0  # the check must finish well under this (bench/bench_health.py measures it)

# The DCGM fields the health check and the alert rules read (monitoring/alerts): the exporter's counters
# file lists them with the real help texts (NVIDIA's default file leaves several commented out).
DCGM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending"),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    (
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
    ),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
)


def counters_csv() -> str:
    """The dcgm-exporter counters file (`DCGM field, Prometheus type, help` per line)."""
    return "# clusterforge: the DCGM fields its alerts and health check read\n" + "".join(
        f"{f}, {t}, {h}\n" for f, t, h in DCGM_FIELDS
    )


def monitoring_input(software: Mapping[str, Any], certification: Mapping[str, Any]) -> dict[str, Any]:
    """What of the plan's software pins and certification policy the monitoring state reads."""
    return {
        "dcgm_exporter": str(software["dcgm_exporter"]),
        "health_interval_s": int(certification["health_interval_s"]),
    }


def monitoring_desired(
    sku: dict[str, Any], rails: list[dict[str, Any]], pins: Mapping[str, Any]
) -> dict[str, Any]:
    """The monitoring desired state of a node of `sku` with `rails` (its plan rails: index and netdev);
    `pins`: `monitoring_input` (the exporter's version, the health check's period)."""
    gpu = sku.get("gpu") or {}
    nvswitch = bool(gpu.get("nvswitch"))
    return {
        "node_exporter": {"port": NODE_EXPORTER_PORT, "textfile_dir": TEXTFILE_DIR},
        "dcgm_exporter": {
            "port": DCGM_EXPORTER_PORT,
            "package": DCGM_EXPORTER_PACKAGE,
            "version": str(pins["dcgm_exporter"]),
            "service": DCGM_EXPORTER_SERVICE,
            "counters_file": DCGM_EXPORTER_COUNTERS,
            "counters": [{"field": f, "type": t, "help": h} for f, t, h in DCGM_FIELDS],
        },
        "checker": {"path": CHECKER_PATH},
        "health": {
            "path": HEALTH_PATH,
            "config": HEALTH_CONFIG,
            "state_dir": HEALTH_STATE_DIR,
            "interval_s": int(pins["health_interval_s"]),
            "budget_s": HEALTH_BUDGET_S,
            "textfile": f"{TEXTFILE_DIR}/clusterforge_health.prom",
            "gpu_count": int(gpu.get("count") or 0),
            "fabric_manager": nvswitch,
            "rails": [
                {"index": int(r["index"]), "netdev": str(r["netdev"])}
                for r in sorted(rails, key=lambda r: int(r["index"]))
            ],
            "dcgm_exporter_url": f"http://127.0.0.1:{DCGM_EXPORTER_PORT}/metrics",
            "certificate_warn_s": 7 * 86400,
        },
    }
