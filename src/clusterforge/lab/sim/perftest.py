"""perftest (``ib_write_bw``, ``ib_write_lat`` and the read/send variants) between two nodes.

As in real perftest the server waits on TCP port 18515 (``-p``) and the client connects to the address given
on its command line, so a run really spans two nodes (over the management network or a rail, whichever
address is used). The exchange carries each side's port, rate and faults; the printed figures are rendered
from the SKU nominal x both sides' fault factors x seeded noise - never from timing veth traffic.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
from typing import Any

from . import perf, sysfs
from . import state as S
from .ibtools import active_mtu

PORT = 18515
DASH = "-" * 87
TITLES = {
    "ib_write_bw": "RDMA_Write BW Test",
    "ib_read_bw": "RDMA_Read BW Test",
    "ib_send_bw": "Send BW Test",
    "ib_write_lat": "RDMA_Write Latency Test",
    "ib_read_lat": "RDMA_Read Latency Test",
    "ib_send_lat": "Send Latency Test",
}


def _args(argv: list[str]) -> dict[str, Any]:
    a: dict[str, Any] = {
        "dev": None,
        "port": PORT,
        "size": None,
        "all": False,
        "gbits": False,
        "iters": None,
        "gid": None,
        "cuda": None,
        "dmabuf": False,
        "bidir": False,
        "qps": 1,
        "host": None,
        "rdma_cm": False,
    }
    takes = {
        "-d",
        "--ib-dev",
        "-p",
        "--port",
        "-s",
        "--size",
        "-n",
        "--iters",
        "-x",
        "--gid-index",
        "-q",
        "--qp",
        "-i",
        "--ib-port",
        "-D",
        "--duration",
        "-m",
        "--mtu",
        "-t",
        "--tx-depth",
        "--use_cuda",
        "-c",
        "--connection",
        "-I",
        "--inline_size",
        "--cpu_util",
        "-Q",
        "--cq-mod",
    }
    i = 0
    while i < len(argv):
        x = argv[i]
        key, eq, val = x.partition("=")
        if key in takes and not eq and i + 1 < len(argv):
            val = argv[i + 1]
            i += 1
        if key in ("-d", "--ib-dev"):
            a["dev"] = val
        elif key in ("-p", "--port"):
            a["port"] = int(val)
        elif key in ("-s", "--size"):
            a["size"] = int(val)
        elif key in ("-n", "--iters"):
            a["iters"] = int(val)
        elif key in ("-x", "--gid-index"):
            a["gid"] = int(val)
        elif key in ("-q", "--qp"):
            a["qps"] = int(val)
        elif key == "--use_cuda":
            a["cuda"] = int(val)
        elif key == "--use_cuda_dmabuf":
            a["dmabuf"] = True
        elif key in ("-a", "--all"):
            a["all"] = True
        elif key in ("-b", "--bidirectional"):
            a["bidir"] = True
        elif key in ("-R", "--rdma_cm"):
            a["rdma_cm"] = True
        elif key in ("--report_gbits", "--report-gbits"):
            a["gbits"] = True
        elif not x.startswith("-"):
            a["host"] = x
        i += 1
    return a


def _gid_bytes(gid: str) -> str:
    raw = gid.replace(":", "")
    return ":".join(f"{int(raw[k : k + 2], 16):02d}" for k in range(0, 32, 2))


def _side(st: dict[str, Any], nic: dict[str, Any], a: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    table = sysfs.gid_table(nic)
    idx = a["gid"]
    if idx is None:
        idx = next((i for i, (g, t, _) in enumerate(table) if t == "RoCE v2" and "ffff" in g), 0)
    gid = table[idx][0] if idx < len(table) else sysfs.ZERO_GID
    f = perf.nic_factor(st, nic)
    if a["cuda"] is not None:
        g = next((x for x in S.visible_gpus(st) if x["index"] == a["cuda"]), None)
        if g is not None and g["index"] != nic["gpu"]:  # GPUDirect across the PCIe tree / the sockets
            f *= 0.9 if nic["numa"] == _gpu_numa(st, g["index"]) else 0.55
    return {
        "node": st["node"]["name"],
        "hca": nic["hca"],
        "rate": S.port_rate(st, nic),
        "up": S.port_up(st, nic),
        "factor": f,
        "link_layer": S.link_layer(nic),
        "mtu": active_mtu(st, nic),
        "lid": nic["lid"],
        "gid_index": idx,
        "gid": gid,
        "qpn": rng.randrange(0x100, 0x3000),
        "psn": rng.randrange(1 << 24),
        "rkey": rng.randrange(1 << 21),
        "vaddr": rng.randrange(1 << 44),
        "noisy": S.fault(st, "noisy") is not None,
    }


def _gpu_numa(st: dict[str, Any], gpu_index: int) -> int:
    from .gpu import numa_of

    return numa_of(st, gpu_index)


def _header(tool: str, a: dict[str, Any], me: dict[str, Any], peer: dict[str, Any]) -> list[str]:
    lat = tool.endswith("_lat")
    ib = me["link_layer"] == "InfiniBand"
    out = [
        DASH,
        "                    "
        + (TITLES[tool].replace("BW Test", "Bidirectional BW Test") if a["bidir"] else TITLES[tool]),
        f" Dual-port       : OFF\t\tDevice         : {me['hca']}",
        f" Number of qps   : {a['qps']}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        f" PCIe relax order: {'OFF' if lat else 'ON'}",
        " ibv_wr* API     : ON",
        f" TX depth        : {1 if lat else 128}",
    ]
    if not lat:
        out.append(" CQ Moderation   : 100")
    out += [
        f" Mtu             : {min(me['mtu'], peer['mtu'])}[B]",
        f" Link type       : {'IB' if ib else 'Ethernet'}",
    ]
    if not ib:
        out.append(f" GID index       : {me['gid_index']}")
    out += [
        f" Max inline data : {220 if lat else 0}[B]",
        f" rdma_cm QPs\t : {'ON' if a['rdma_cm'] else 'OFF'}",
        f" Data ex. method : {'rdma_cm' if a['rdma_cm'] else 'Ethernet'}",
        DASH,
    ]
    for label, s in (("local", me), ("remote", peer)):
        lid = f"0x{s['lid']:02x}" if ib else "0000"
        out.append(
            f" {label} address: LID {lid} QPN 0x{s['qpn']:04x} PSN 0x{s['psn']:06x} RKey 0x{s['rkey']:06x} "
            f"VAddr 0x{s['vaddr']:014x}"
        )
        if not ib:
            out.append(f" GID: {_gid_bytes(s['gid'])}")
    out.append(DASH)
    return out


def _sizes(a: dict[str, Any], lat: bool) -> list[int]:
    if a["all"]:
        return [1 << k for k in range(1, 24)]
    return [a["size"] or (2 if lat else 65536)]


def results(
    tool: str, st: dict[str, Any], a: dict[str, Any], me: dict[str, Any], peer: dict[str, Any], run: int
) -> list[list[float]]:
    noise = perf.Noise(st, run, tool)
    if me["noisy"] or peer["noisy"]:
        noise.sigma = perf.NOISY_SIGMA
    rate = min(me["rate"], peer["rate"])
    lat = tool.endswith("_lat")
    rows = []
    iters = a["iters"] or (1000 if lat else 5000)
    if lat:
        base = perf.nic_latency_us(me["link_layer"], rate)
        for size in _sizes(a, True):
            t = (
                (base + size * 8 / (rate * 1e3) * 1.1)
                * noise.jitter(0.01)
                / min(me["factor"], peer["factor"], 1.0)
            )
            rows.append([size, iters, t * 0.96, t * 2.6, t, t * 1.005, t * 0.05, t * 1.08, t * 2.5])
        return rows
    floor = float(st["sku"]["thresholds"]["ib_write_bw_gbps"]["value"])
    nominal = perf.nic_nominal_gbps(st["sku"], rate)
    peak = noise.value(nominal, floor if rate >= int(st["sku"]["compute_nics"]["speed_gbps"]) else None)
    peak *= min(me["factor"], peer["factor"])
    mpps = 3.6
    for size in _sizes(a, False):
        avg = 1.0 / (1.0 / peak + 1.0 / (size * 8 * mpps * 1e-3))
        avg *= noise.jitter(0.002)
        if a["bidir"]:
            avg *= 2
        rows.append(
            [size, iters, avg * (1.0 + abs(noise.rng.gauss(0, 0.002))), avg, avg * 1e9 / 8 / size / 1e6]
        )
    return rows


def _report(tool: str, a: dict[str, Any], rows: list[list[float]]) -> list[str]:
    if tool.endswith("_lat"):
        out = [
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
            "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
        ]
        for r in rows:
            out.append(
                f" {int(r[0]):<7} {int(r[1]):<10}    {r[2]:<7.2f}        {r[3]:<7.2f}      {r[4]:<7.2f}  \t"
                f"       {r[5]:<7.2f}     \t{r[6]:<7.2f}\t\t{r[7]:<7.2f} \t{r[8]:<7.2f}"
            )
        return [*out, DASH]
    unit = "Gb/sec" if a["gbits"] else "MB/sec"
    conv = 1.0 if a["gbits"] else 1e9 / 8 / 1048576
    out = [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"]
    for r in rows:
        out.append(
            f" {int(r[0]):<7}    {int(r[1]):<10}       {r[2] * conv:<7.2f}            {r[3] * conv:<7.2f}"
            f"\t\t   {r[4]:<7.6f}"
        )
    return [*out, DASH]


def _cuda_preamble(st: dict[str, Any], a: dict[str, Any]) -> tuple[list[str], str | None]:
    from . import gpu as G

    if G.cuda_init():
        return [], "Couldn't initialize CUDA: CUDA_ERROR_NO_DEVICE"
    gpus = S.visible_gpus(st)
    if a["cuda"] >= len(gpus):
        return [], f"No CUDA device {a['cuda']}"
    out = ["initializing CUDA", "Listing all CUDA devices in system:"]
    out += [f"CUDA device {i}: PCIe address is {g['bus_id'][9:14]}" for i, g in enumerate(gpus)]
    out += [
        "",
        f"Picking device No. {a['cuda']}",
        f"[pid = {os.getpid()}, dev = {a['cuda']}] device name = [{st['sku']['gpu']['model']}]",
        "creating CUDA Ctx",
        "making it the current CUDA Ctx",
        "CUDA device integrated: 0",
    ]
    if not a["dmabuf"] and "nvidia_peermem" not in S.modules_loaded(st):
        return out, "Couldn't allocate MR\n failed to create mr\n Failed to create MR"
    out += [
        f"allocated GPU buffer of a 16777216 address at 0x{random.randrange(1 << 44):x} "
        "for type CUDA_MEM_DEVICE"
    ]
    return out, None


def main(tool: str, argv: list[str]) -> int:
    a = _args(argv)
    st, run = S.next_run()
    nic = S.nic_by(st, a["dev"]) if a["dev"] else (st["nics"][0] if st["nics"] else None)
    if nic is None:
        sys.stderr.write(f" Couldn't find device {a['dev']}\n Unable to find the Infiniband/RoCE device\n")
        return 1
    if not S.port_up(st, nic):
        sys.stderr.write(" Port number 1 state is Down\n Couldn't set the link layer\n")
        return 1
    pre: list[str] = []
    if a["cuda"] is not None:
        pre, err = _cuda_preamble(st, a)
        if err:
            sys.stdout.write("\n".join(pre) + "\n")
            sys.stderr.write(err + "\n")
            return 1
    rng = random.Random(f"{st['node']['name']}:{run}:{tool}:qp")
    me = _side(st, nic, a, rng)
    try:
        if a["host"] is None:
            return _server(tool, st, a, me, pre, run)
        return _client(tool, st, a, me, pre, run)
    except (OSError, ValueError) as e:
        sys.stderr.write(f" Failed to exchange data between server and clients ({e})\n")
        return 1


def _send(conn: socket.socket, obj: dict[str, Any]) -> None:
    conn.sendall((json.dumps(obj) + "\n").encode())


def _recv(f: Any) -> dict[str, Any]:
    line = f.readline()
    if not line:
        raise ValueError("peer closed the connection")
    data: dict[str, Any] = json.loads(line)
    return data


def _server(
    tool: str, st: dict[str, Any], a: dict[str, Any], me: dict[str, Any], pre: list[str], run: int
) -> int:
    sys.stdout.write(
        "\n************************************\n* Waiting for client to connect... *\n"
        "************************************\n"
    )
    sys.stdout.flush()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", a["port"]))
        srv.listen(1)
        conn, _ = srv.accept()
        with conn, conn.makefile("r") as f:
            hello = _recv(f)
            if hello.get("tool") != tool:
                raise ValueError(f"client runs {hello.get('tool')}, server {tool}")
            _send(conn, me)
            if hello["link_layer"] != me["link_layer"]:
                sys.stderr.write(" Link layers differ between client and server\n")
                return 1
            res = _recv(f)
    out = pre + _header(tool, a, me, hello["side"]) + _report(tool, a, res["rows"])
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _client(
    tool: str, st: dict[str, Any], a: dict[str, Any], me: dict[str, Any], pre: list[str], run: int
) -> int:
    try:
        conn = socket.create_connection((a["host"], a["port"]), timeout=15)
    except OSError:
        sys.stderr.write(
            f"Couldn't connect to {a['host']}:{a['port']}\n"
            "Unable to open file descriptor for socket connection Unable to init the socket connection\n"
        )
        return 1
    with conn, conn.makefile("r") as f:
        conn.settimeout(60)
        _send(conn, {"tool": tool, "link_layer": me["link_layer"], "side": me})
        peer = _recv(f)
        if peer["link_layer"] != me["link_layer"]:
            sys.stderr.write(" Link layers differ between client and server\n")
            return 1
        rows = results(tool, st, a, me, peer, run)
        _send(conn, {"rows": rows})
    out = pre + _header(tool, a, me, peer) + _report(tool, a, rows)
    if a["cuda"] is not None:
        out += ["deallocating GPU buffer 00007f0000000000", "destroying current CUDA Ctx"]
    sys.stdout.write("\n".join(out) + "\n")
    return 0
