"""``dcgm-exporter`` (simulated): DCGM fields of the simulated GPUs in the Prometheus text format.

Layout as the real exporter prints it (tests/fixtures/real/dcgm-exporter-metrics__*): a `# HELP` and
`# TYPE` line before each family, one sample per visible GPU labelled `gpu`, `UUID`, `pci_bus_id`,
`device`, `modelName`, `Hostname`, `DCGM_FI_DRIVER_VERSION`; `DCGM_FI_DEV_XID_ERRORS` adds `err_code` and
`err_msg`. The fields served are those of the counters CSV given with `-f` (the real file's format:
`DCGM field, Prometheus type, help`), default: every field below. A GPU that fell off the bus (or is
missing) has no samples, as NVML no longer answers for it. Flags: `-f FILE`, `-a [HOST]:PORT` (default
`:9400`), like the real binary's `--collectors` / `--address`.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import gpu as G
from . import paths
from . import state as S

DEFAULT_PORT = 9400
Getter = Callable[[dict[str, Any], dict[str, Any]], float]

# Xids whose fault the simulator injects (faults.py): the GPU's last Xid, as DCGM_FI_DEV_XID_ERRORS shows it
_FAULT_XID = (("row-remap-pending", 63), ("ecc-uncorrectable", 48))
_XID_MSG = {0: "No Error", 48: "DBE (Double Bit Error) ECC Error", 63: "ECC page retirement or row remapping"}


def _last_xid(st: dict[str, Any], g: dict[str, Any]) -> int:
    for kind, xid in _FAULT_XID:
        if g["index"] in S.targets(st, kind, "gpu", len(st["gpus"])):
            return xid
    return 0


def _ecc(key: str, kind: str) -> Getter:
    return lambda st, g: float(G.ecc_counts(st, g)[kind][key])


def _remap(key: str) -> Getter:
    return lambda st, g: float(G.remapped(st, g)[key])


def _mem_mib(st: dict[str, Any]) -> float:
    return float(st["sku"]["gpu"]["memory_mib"])


# field -> (Prometheus type, help, value): the help texts are those the real exporter prints
FIELDS: dict[str, tuple[str, str, Getter]] = {
    "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz).", lambda st, g: 1980.0),
    "DCGM_FI_DEV_MEM_CLOCK": ("gauge", "Memory clock frequency (in MHz).", lambda st, g: 2619.0),
    "DCGM_FI_DEV_MEMORY_TEMP": (
        "gauge",
        "Memory temperature (in C).",
        lambda st, g: float(G.temperature(st, g) + 2),
    ),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C).", lambda st, g: float(G.temperature(st, g))),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W).", lambda st, g: G.power_draw(st, g)),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("counter", "Total number of PCIe retries.", lambda st, g: 0.0),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %).", lambda st, g: 0.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("gauge", "Memory utilization (in %).", lambda st, g: 0.0),
    "DCGM_FI_DEV_XID_ERRORS": (
        "gauge",
        "Value of the last XID error encountered.",
        lambda st, g: float(_last_xid(st, g)),
    ),
    "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB).", lambda st, g: _mem_mib(st) - 717),
    "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB).", lambda st, g: 0.0),
    "DCGM_FI_DEV_FB_RESERVED": ("gauge", "Framebuffer memory reserved (in MiB).", lambda st, g: 717.0),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": (
        "counter",
        "Total number of single-bit volatile ECC errors.",
        _ecc("dram_correctable", "volatile"),
    ),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (
        "counter",
        "Total number of double-bit volatile ECC errors.",
        _ecc("dram_uncorrectable", "volatile"),
    ),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (
        "counter",
        "Total number of double-bit persistent ECC errors.",
        _ecc("dram_uncorrectable", "aggregate"),
    ),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": (
        "counter",
        "Total number of NVLink flow-control CRC errors.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": (
        "counter",
        "Total number of NVLink data CRC errors.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": (
        "counter",
        "Total number of NVLink retries.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": (
        "counter",
        "Total number of NVLink recovery errors.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": (
        "counter",
        "Number of remapped rows for uncorrectable errors",
        _remap("uncorrectable"),
    ),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": (
        "counter",
        "Number of remapped rows for correctable errors",
        _remap("correctable"),
    ),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gauge", "Whether remapping of rows has failed", _remap("failure")),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": ("gauge", "Whether remapping of rows is pending", _remap("pending")),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (
        "gauge",
        "Ratio of time the graphics engine is active.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        lambda st, g: 0.0,
    ),
    "DCGM_FI_PROF_DRAM_ACTIVE": (
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        lambda st, g: 0.0,
    ),
}


def read_counters(text: str) -> list[tuple[str, str, str]]:
    """(field, type, help) rows of a dcgm-exporter counters CSV; comments and blank lines skipped."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def _labels(pairs: list[tuple[str, str]]) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in pairs) + "}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def render(st: dict[str, Any], driver_version: str, hostname: str, fields: list[str] | None = None) -> str:
    """The /metrics body for the node's visible GPUs; `fields`: the counters to serve (default all known).

    Fields the simulator does not know are left out (the real exporter skips fields the GPU lacks)."""
    model = str(st["sku"]["gpu"].get("model", "GPU"))
    model_name = model if model.startswith("NVIDIA") else f"NVIDIA {model}"
    wanted = [f for f in (fields if fields is not None else list(FIELDS)) if f in FIELDS]
    gpus = S.visible_gpus(st)
    out: list[str] = []
    for field in wanted:
        kind, help_text, get = FIELDS[field]
        out += [f"# HELP {field} {help_text}", f"# TYPE {field} {kind}"]
        for g in gpus:
            labels = [
                ("gpu", str(g["index"])),
                ("UUID", str(g["uuid"])),
                ("pci_bus_id", str(g["bus_id"])),
                ("device", f"nvidia{g['index']}"),
                ("modelName", model_name),
                ("Hostname", hostname),
                ("DCGM_FI_DRIVER_VERSION", driver_version),
            ]
            if field == "DCGM_FI_DEV_XID_ERRORS":
                code = _last_xid(st, g)
                labels += [("err_code", str(code)), ("err_msg", _XID_MSG.get(code, "Unknown Error"))]
            out.append(f"{field}{_labels(labels)} {_num(get(st, g))}")
    return "\n".join(out) + "\n"


def _args(argv: list[str]) -> tuple[str, int, str | None]:
    host, port, counters = "", DEFAULT_PORT, None
    i = 0
    while i < len(argv):
        a = argv[i]
        val = argv[i + 1] if i + 1 < len(argv) else ""
        if a in ("-a", "--address"):
            h, _, p = val.rpartition(":")
            host, port = h, int(p)
            i += 2
        elif a in ("-f", "--collectors"):
            counters, i = val, i + 2
        else:
            i += 1
    return host, port, counters


def body(counters: str | None) -> tuple[int, str]:
    """(HTTP status, text) of one scrape: 500 when the driver or the state cannot be read."""
    drv = S.driver()
    if drv is None:
        return 500, "failed to initialize NVML: driver not loaded\n"
    try:
        st = S.load()
    except (OSError, ValueError) as exc:
        return 500, f"cannot read the GPU state: {exc}\n"
    fields = None
    if counters:
        if not paths.p(counters).is_file():
            return 500, f"cannot read the counters file {counters}\n"
        fields = [r[0] for r in read_counters(paths.read(counters))]
    return 200, render(st, str(drv["version"]), socket.gethostname(), fields)


def main(argv: list[str]) -> int:
    host, port, counters = _args(argv)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            code, text = body(counters)
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer((host or "0.0.0.0", port), Handler)
    sys.stdout.write(f"Starting webserver on {host}:{port}\n")
    sys.stdout.flush()
    srv.serve_forever()
    return 0
