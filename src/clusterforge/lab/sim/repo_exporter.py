"""The simulated `datacenter-gpu-manager-exporter` package (NVIDIA's name for dcgm-exporter in its CUDA
repositories: `datacenter-gpu-manager-exporter_<version>-1_amd64.deb`, depending on the DCGM 4 core).

It ships `/usr/bin/dcgm-exporter` (the simulator's multi-call entry: `dcgm_exporter.py`), the counters
file `/etc/dcgm-exporter/default-counters.csv` in the real file's format, and a systemd unit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import dcgm_exporter, paths, units

if TYPE_CHECKING:
    from .repo import Deb

NAME = "datacenter-gpu-manager-exporter"
VERSIONS = ["4.1.3", "4.5.0"]
UNIT_NAME = "nvidia-dcgm-exporter.service"
COUNTERS = "/etc/dcgm-exporter/default-counters.csv"

UNIT = f"""[Unit]
Description=NVIDIA DCGM exporter (Prometheus /metrics of the GPUs' DCGM fields)
After=network-online.target

[Service]
ExecStart=/usr/bin/dcgm-exporter -f {COUNTERS} -a :{dcgm_exporter.DEFAULT_PORT}
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


def counters_csv() -> str:
    """Every field the simulated exporter serves, as `DCGM field, Prometheus type, help` rows."""
    head = "# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
    rows = [f"{f}, {kind}, {text}" for f, (kind, text, _) in dcgm_exporter.FIELDS.items()]
    return head + "\n".join(rows) + "\n"


def packages() -> list[Deb]:
    from .repo import Deb, _marker

    return [
        Deb(
            NAME,
            f"{v}-1",
            f"NVIDIA DCGM exporter {v} for Prometheus (simulated by the clusterforge lab: serves the "
            "simulated GPUs' DCGM fields)",
            depends=["python3", "datacenter-gpu-manager-4-core"],
            links={"/usr/bin/dcgm-exporter": paths.ENTRY},
            files={
                f"/lib/systemd/system/{UNIT_NAME}": UNIT,
                COUNTERS: counters_csv(),
                **_marker("dcgm-exporter", version=v),
            },
            scripts={
                "postinst": units.SERVICE_POSTINST,
                "prerm": units.SERVICE_PRERM.replace("@UNIT@", UNIT_NAME),
            },
        )
        for v in VERSIONS
    ]
