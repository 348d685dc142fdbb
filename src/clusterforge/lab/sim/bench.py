"""``nvbandwidth`` and the nccl-tests binaries (``all_reduce_perf`` ...), rendered, never timed."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from . import gpu as G
from . import perf
from . import state as S

# testcase -> (matrix title, kind, direction factor)
NVB_CASES: dict[str, tuple[str, str, float]] = {
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d", 1.0),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h", 1.0),
    "host_to_device_bidirectional_memcpy_ce": (
        "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
        "h2d",
        0.9,
    ),
    "device_to_host_bidirectional_memcpy_ce": (
        "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
        "d2h",
        0.9,
    ),
    "device_to_device_memcpy_read_ce": ("memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "d2d", 1.0),
    "device_to_device_memcpy_write_ce": ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "d2d", 1.04),
    "device_to_device_bidirectional_memcpy_read_ce": (
        "memcpy CE GPU(row) <-> GPU(column) bandwidth (GB/s)",
        "d2d",
        0.92,
    ),
    "device_to_device_bidirectional_memcpy_write_ce": (
        "memcpy CE GPU(row) <-> GPU(column) bandwidth (GB/s)",
        "d2d",
        0.93,
    ),
    "host_to_device_memcpy_sm": ("memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d", 1.01),
    "device_to_host_memcpy_sm": ("memcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h", 1.01),
    "device_to_device_memcpy_read_sm": ("memcpy SM GPU(row) <- GPU(column) bandwidth (GB/s)", "d2d", 1.02),
    "device_to_device_memcpy_write_sm": ("memcpy SM GPU(row) -> GPU(column) bandwidth (GB/s)", "d2d", 1.03),
}
CUDA_NOT_READY = "system not yet initialized"


def _cuda_error(st: dict[str, Any]) -> str | None:
    """What cudaGetDeviceCount would fail with on this node, if anything (cuInit loads nvidia_uvm)."""
    err = G.cuda_init()
    if err:
        return err
    if not S.visible_gpus(st):
        return "no CUDA-capable device is detected"
    if not G.fabric_ready(st):
        return CUDA_NOT_READY
    return None


def _matrix(gpus: list[dict[str, Any]], cells: dict[tuple[int, int], float | None], rows: int) -> list[str]:
    w = len(str(max(rows, len(gpus)) - 1))
    out = [" " * w + "".join(f"{j:>10}" for j in range(len(gpus)))]
    for i in range(rows):
        line = f"{i:<{w}}"
        for j in range(len(gpus)):
            v = cells.get((i, j))
            line += f"{'N/A':>10}" if v is None else f"{v:>10.2f}"
        out.append(line)
    return out


def nvbandwidth(argv: list[str]) -> int:
    cases: list[str] = []
    for i, a in enumerate(argv):
        if a in ("-t", "--testcase") and i + 1 < len(argv):
            cases += argv[i + 1].split(",")
        elif a.startswith("--testcase="):
            cases += a.split("=", 1)[1].split(",")
    if "-l" in argv or "--list" in argv:
        sys.stdout.write("".join(f"{i}, {name}:\n" for i, name in enumerate(NVB_CASES)))
        return 0
    cases = cases or list(NVB_CASES)
    unknown = [c for c in cases if c not in NVB_CASES and not c.isdigit()]
    if unknown:
        sys.stderr.write(f"ERROR: Testcase {unknown[0]} not found!\n")
        return 1
    cases = [list(NVB_CASES)[int(c)] if c.isdigit() else c for c in cases]
    st, run = S.next_run()
    drv = S.driver() or {"version": "N/A"}
    err = _cuda_error(st)
    ver = S.package("nvbandwidth") or {"version": "v0.8"}
    cuda = G.cuda_version(drv) if drv.get("version") != "N/A" else "12.8"
    cv = int(cuda.split(".")[0]) * 1000 + int(cuda.split(".")[1]) * 10
    out = [
        f"nvbandwidth Version: {ver['version']}",
        f"Built from Git version: {ver['version']}",
        "",
        "NOTE: This tool reports current measured bandwidth on your system.",
        "Additional system-specific tuning may be required to achieve maximal peak bandwidth.",
        "",
        f"CUDA Runtime Version: {cv}",
        f"CUDA Driver Version: {cv}",
        f"Driver Version: {drv['version']}",
        "",
    ]
    if err:
        sys.stdout.write("\n".join(out) + "\n")
        sys.stderr.write(f"CUDA_ERROR: {err}\n")
        return 1
    gpus = S.visible_gpus(st)
    out += [f"Device {i}: {st['sku']['gpu']['model']}" for i in range(len(gpus))] + [""]
    nom = perf.gpu_nominal(st["sku"])
    thr = st["sku"]["thresholds"]
    noise = perf.Noise(st, run, "nvbandwidth")
    for case in cases:
        title, kind, dirf = NVB_CASES[case]
        cells: dict[tuple[int, int], float | None] = {}
        if kind in ("h2d", "d2h"):
            floor = thr[f"{kind}_gbs"]["value"]
            rows = 1
            for j, g in enumerate(gpus):
                cells[(0, j)] = noise.value(nom[kind] * dirf, floor) * perf.gpu_factor(st, g["index"])
        else:
            rows = len(gpus)
            floor = thr["d2d_gbs"]["value"]
            for i, ga in enumerate(gpus):
                for j, gb in enumerate(gpus):
                    f = min(perf.gpu_factor(st, ga["index"]), perf.gpu_factor(st, gb["index"]))
                    cells[(i, j)] = None if i == j else noise.value(nom["d2d"] * dirf, floor) * f
        vals = [v for v in cells.values() if v is not None]
        out += [f"Running {case}.", title.removesuffix(" bandwidth (GB/s)") + " bandwidth (GB/s)"]
        out += _matrix(gpus, cells, rows)
        out += ["", f"SUM {case} {sum(vals):.2f}", ""]
    out += [
        "NOTE: The reported results may not reflect the full capabilities of the platform.",
        "Performance can vary with software drivers, hardware clocks, and system topology.",
        "",
    ]
    sys.stdout.write("\n".join(out))
    return 0


# ---- nccl-tests ----------------------------------------------------------------------------------------

COLLECTIVES = {  # binary -> (op name, redop, busbw factor(n), peak relative to all_reduce)
    "all_reduce_perf": ("all_reduce", "sum", lambda n: 2 * (n - 1) / n, 1.0),
    "all_gather_perf": ("all_gather", "none", lambda n: (n - 1) / n, 0.76),
    "reduce_scatter_perf": ("reduce_scatter", "sum", lambda n: (n - 1) / n, 0.76),
    "alltoall_perf": ("alltoall", "none", lambda n: (n - 1) / n, 0.72),
    "broadcast_perf": ("broadcast", "none", lambda n: 1.0, 0.72),
    "reduce_perf": ("reduce", "sum", lambda n: 1.0, 0.72),
    "sendrecv_perf": ("sendrecv", "sum", lambda n: 1.0, 0.8),
}
_SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(text: str) -> int:
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in _SIZE_UNITS:
        return int(float(t[:-1]) * _SIZE_UNITS[t[-1]])
    return int(t)


def _opt(argv: list[str], short: str, long: str, default: str) -> str:
    for i, a in enumerate(argv):
        if a in (short, long) and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(long + "="):
            return a.split("=", 1)[1]
    return default


def _time_str(us: float) -> str:
    if us >= 10000.0:
        return f"{us:7.0f}"
    return f"{us:7.1f}" if us >= 100.0 else f"{us:7.2f}"


def nccl_test(binary: str, argv: list[str]) -> int:
    _op, redop, busf, rel = COLLECTIVES[binary]
    lo = parse_size(_opt(argv, "-b", "--minbytes", "32M"))
    hi = parse_size(_opt(argv, "-e", "--maxbytes", "32M"))
    factor = int(_opt(argv, "-f", "--stepfactor", "2"))
    ngpus = int(_opt(argv, "-g", "--ngpus", "1"))
    iters = int(_opt(argv, "-n", "--iters", "20"))
    warm = int(_opt(argv, "-w", "--warmup_iters", "5"))
    dtype = _opt(argv, "-d", "--datatype", "float")
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("SLURM_NTASKS") or 1)
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("SLURM_PROCID") or 0)
    host = socket.gethostname()
    st, run = S.next_run()
    out = [
        f"# nThread 1 nGpus {ngpus} minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: {warm} "
        f"iters: {iters} agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    gpus = S.visible_gpus(st)
    err = _cuda_error(st)
    if err is None and ngpus > len(gpus):
        err = "invalid device ordinal"
    if err:
        if rank == 0:
            sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.write(
            f"{host}: Test CUDA failure common.cu:1093 '{err}'\n"
            f" .. {host} pid {os.getpid()}: Test failure common.cu:1021\n"
        )
        return 2
    if rank != 0:
        return 0
    nranks = ngpus * world
    for r in range(nranks):
        g = gpus[r % ngpus]
        out.append(
            f"#  Rank {r:2d} Group  0 Pid {os.getpid():6d} on {host:>10} device {r % ngpus:2d} "
            f"[0x{int(g['bus_id'].split(':')[1], 16):02x}] {st['sku']['gpu']['model']}"
        )
    nccl = S.package("libnccl2") or {"version": "2.26.2", "cuda": "12.8"}
    out += [
        f"NCCL version {nccl['version']}+cuda{nccl.get('cuda', '12.8')}",
        "#",
        "#                                                              out-of-place                       "
        "in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
        "algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
        "(GB/s)  (GB/s)       ",
    ]
    peak = perf.gpu_nominal(st["sku"])["allreduce"] * rel
    floor = st["sku"]["thresholds"]["allreduce_busbw_gbs"]["value"] * rel
    if world > 1:  # inter-node: bounded by the node's rails (approximate; peers' faults not seen)
        nic_gbs = (
            sum(
                perf.nic_nominal_gbps(st["sku"], S.port_rate(st, n)) * perf.nic_factor(st, n)
                for n in st["nics"]
                if S.port_up(st, n)
            )
            / 8
        )
        peak, floor = min(peak, nic_gbs * 0.92), 0.0
    peak *= min(perf.gpu_factor(st, g["index"]) for g in gpus[:ngpus])
    noise = perf.Noise(st, run, binary)
    bf = busf(nranks) if nranks > 1 else 1.0
    esize = 8 if dtype in ("double", "int64", "uint64") else 2 if dtype in ("half", "bfloat16") else 4
    size, rows, total = lo, 0, 0.0
    while size <= hi:
        count = max(size // esize, 1)
        line = f"{count * esize:>12}  {count:>12}  {dtype:>8}  {redop:>6}  {-1:>6}"
        for _ in ("out", "in"):
            bus_peak = noise.value(peak, floor if size >= 8 * 1024**3 else None)
            algbw_peak = bus_peak / bf
            t_us = 30.0 * noise.jitter(0.03) + (size + 30 * 1024**2) / (algbw_peak * 1e9) * 1e6
            algbw = size / (t_us * 1e-6) / 1e9
            busbw = algbw * bf
            line += f"  {_time_str(t_us)}  {algbw:6.2f}  {busbw:6.2f}  {0:5d}"
            total += busbw / 2
        out.append(line)
        rows += 1
        size = size * factor if factor > 1 else size + max(1, factor)
        if lo == hi:
            break
    out += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {total / max(rows, 1):.2f} ", "#", ""]
    sys.stdout.write("\n".join(out) + "\n")
    return 0
