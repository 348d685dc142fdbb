"""The single-node part of an iteration: one shell script per node (one SSH session) and its output split into
sections (`burnin.measure` parses them into measurements).

Tests (the full tier's performance checks, validators/test_performance.py, repeated): `dcgmi diag -r LEVEL
-j`, `nvbandwidth` H2D/D2H/D2D, `ib_write_bw` GPUDirect loopback per rail, single-node `all_reduce_perf`,
fio sequential read and write on the node's storage targets when it declares storage (`burnin.storage`);
and the counters burn-in watches: ECC (nvidia-smi --query-gpu) and the rails' port error counters (sysfs).
Every command runs under `timeout -k 2 T` (`clusterforge.remote.commands.wrap`) so a hung tool costs its
own time limit, not the iteration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clusterforge.burnin import storage
from clusterforge.burnin.model import Measurement
from clusterforge.plan.expect import NodeExpect, Rail
from clusterforge.remote.commands import Word, argv, shell

DCGM_TIMEOUT_S = {1: 120, 2: 600, 3: 2400, 4: 7200}  # as validators/test_performance.py
NVB_CASES = {
    "h2d": "host_to_device_memcpy_ce",
    "d2h": "device_to_host_memcpy_ce",
    "d2d": "device_to_device_memcpy_read_ce",
}
ECC_FIELDS = (
    "index",
    "serial",
    "ecc.errors.corrected.aggregate.total",
    "ecc.errors.uncorrected.aggregate.total",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
)
MARK = "@@cf-burnin"
_SECTION = re.compile(
    rf"^{MARK} begin (\S+) rc=(\d+)$\n(.*?)^{MARK} stderr \1$\n(.*?)^{MARK} end \1$", re.S | re.M
)


@dataclass(frozen=True)
class SuiteOptions:
    dcgm_level: int = 2
    ib_size: int = 8388608
    ib_seconds: int = 2  # perftest -D
    allreduce: str = "-b 16G -e 16G -f 2 -w 5 -n 20"
    nvb_timeout_s: int = 300
    ib_timeout_s: int = 120
    nccl_timeout_s: int = 600
    ib_sysfs: str = "/sys/class/infiniband"
    storage: bool = True  # fio on the node's storage targets when it declares storage (`burnin.storage`)
    counters: tuple[str, ...] = (
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "local_link_integrity_errors",
        "port_rcv_remote_physical_errors",
        "excessive_buffer_overrun_errors",
    )


@dataclass(frozen=True)
class Section:
    rc: int
    out: str
    err: str


@dataclass
class NodeSample:
    """What one node's script gave: measurements, and the parts it saw (for records and certificates)."""

    measurements: list[Measurement] = field(default_factory=list)
    gpu_serials: dict[int, str] = field(default_factory=dict)
    nic_guids: dict[int, str] = field(default_factory=dict)
    tool_versions: dict[str, str] = field(default_factory=dict)


def gid_arg(node: NodeExpect) -> list[Word]:
    gid = node.knobs.get("nccl_ib_gid_index") if node.roce else None
    return ["-x", int(gid)] if gid is not None else []


def ib_args(node: NodeExpect, rail: Rail, port: int, opts: SuiteOptions, cuda: bool) -> list[Word]:
    """ib_write_bw's arguments (argv words) for one rail."""
    args: list[Word] = ["-d", rail.hca, "-i", rail.port, *gid_arg(node), "-s", int(opts.ib_size), "-F"]
    args += ["--report_gbits", "-D", int(opts.ib_seconds), "-p", port]
    return args + ([f"--use_cuda={int(rail.gpu)}"] if cuda else [])


def loopback_cmd(node: NodeExpect, rail: Rail, opts: SuiteOptions) -> str:
    """GPUDirect loopback on one HCA (server and client on the same port, as the full tier does); the client
    starts once the server says it waits (no fixed sleep). The arguments are the snippet's positional
    parameters (``set --``), so no value is ever shell syntax."""
    args = ib_args(node, rail, 18515 + rail.index, opts, cuda=True)
    return (
        argv("set", "--", *args)
        + "; "
        + shell(
            's=$(mktemp); ib_write_bw "$@" >"$s" 2>&1 & srv=$!; '
            "for i in $(seq 200); do grep -q 'Waiting for client' \"$s\" && break; "
            "kill -0 $srv 2>/dev/null || break; sleep 0.05; done; "
            'ib_write_bw "$@" 127.0.0.1; rc=$?; wait $srv; rm -f "$s"; exit $rc'
        )
    )


def counters_cmd(node: NodeExpect, opts: SuiteOptions) -> str:
    """``guid <rail> <guid>`` and ``c <rail> <counter> <value>`` lines for every rail."""
    reads = []
    for r in node.rails:
        base = f"{opts.ib_sysfs}/{r.hca}"
        reads.append(shell("echo guid {} $(cat {} 2>/dev/null)", r.index, f"{base}/node_guid"))
        reads += [
            shell("echo c {} {} $(cat {} 2>/dev/null)", r.index, c, f"{base}/ports/{r.port}/counters/{c}")
            for c in opts.counters
        ]
    return "; ".join(reads)


def steps(node: NodeExpect, opts: SuiteOptions) -> list[tuple[str, int, str]]:
    """(key, timeout s, command) for one node's iteration, in run order."""
    gpus = int(node.gpu["count"])
    nvb = [w for c in NVB_CASES.values() for w in ("-t", c)]
    out: list[tuple[str, int, str]] = [
        (
            "dcgm",
            DCGM_TIMEOUT_S.get(opts.dcgm_level, 7200),
            argv("dcgmi", "diag", "-r", opts.dcgm_level, "-j"),
        ),
        ("nvbandwidth", opts.nvb_timeout_s, argv("nvbandwidth", *nvb)),
    ]
    out += [(f"loopback.{r.index}", opts.ib_timeout_s, loopback_cmd(node, r, opts)) for r in node.rails]
    allreduce = argv("all_reduce_perf", *opts.allreduce.split(), "-g", gpus)
    out.append(("allreduce", opts.nccl_timeout_s, allreduce))
    out += storage.steps(node) if opts.storage else []
    ecc = argv("nvidia-smi", f"--query-gpu={','.join(ECC_FIELDS)}", "--format=csv,noheader,nounits")
    out.append(("ecc", 60, ecc))
    out.append(("counters", 30, counters_cmd(node, opts)))
    return out


def script(node: NodeExpect, opts: SuiteOptions) -> tuple[str, float]:
    """The bash script for one node's iteration and its overall deadline (s)."""
    lines = [
        "set -u",
        "D=$(mktemp -d); trap 'rm -rf \"$D\"' EXIT",
        "cfb() {",
        '  LC_ALL=C timeout -k 2 "$2" sh -c "$3" >"$D/o" 2>"$D/e" </dev/null; rc=$?',
        f'  printf "\\n{MARK} begin %s rc=%d\\n" "$1" "$rc"; cat "$D/o"',
        f'  printf "\\n{MARK} stderr %s\\n" "$1"; tail -c 4000 "$D/e"; printf "\\n{MARK} end %s\\n" "$1"',
        "}",
    ]
    total = 30.0
    for key, t, cmd in steps(node, opts):
        lines.append(argv("cfb", key, int(t), cmd))
        total += t + 3
    return "\n".join(lines) + "\n", total


def split_sections(text: str) -> dict[str, Section]:
    return {m.group(1): Section(int(m.group(2)), m.group(3), m.group(4)) for m in _SECTION.finditer(text)}
