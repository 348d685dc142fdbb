"""The single-node part of an iteration: one shell script per node (one SSH session), its output split into
sections and parsed with `clusterforge.hw` into measurements.

Tests (the full tier's performance checks, validators/test_performance.py, repeated): `dcgmi diag -r LEVEL
-j`, `nvbandwidth` H2D/D2H/D2D, `ib_write_bw` GPUDirect loopback per rail, single-node `all_reduce_perf`;
and the counters burn-in watches: ECC (nvidia-smi --query-gpu) and the rails' port error counters (sysfs).
Every command runs under `timeout -k 2 T` (`clusterforge.remote.commands.wrap`) so a hung tool costs its
own time limit, not the iteration.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusterforge.burnin.model import COUNTER_PREFIX, Measurement
from clusterforge.hw import ParseError, dcgmi, nccl_tests, nvbandwidth, perftest
from clusterforge.hw.nvidia_smi import parse_query_csv
from clusterforge.plan.expect import NodeExpect, Rail
from clusterforge.remote.commands import Word, argv, shell
from clusterforge.remote.tools import Tool, cannot_certify, missing

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


def _fail(sec: Section | None, what: str) -> str:
    if sec is None:
        return f"{what}: no output (the node's script did not reach it)"
    if sec.rc == 124:
        return f"{what}: timed out"
    tail = (sec.err.strip() or sec.out.strip()).splitlines()[-1:] or ["no output"]
    return f"{what}: exit {sec.rc}: {tail[0][:200]}"


def _parsed(sec: Section | None, what: str, parse: Callable[[str], Any]) -> tuple[Any, str]:
    if sec is None or not sec.out.strip():
        return None, _fail(sec, what)
    try:
        return parse(sec.out), ""
    except ParseError as exc:
        return None, f"{what}: {_fail(sec, what) if sec.rc else ''} unparsable output: {exc}".strip()


def absent(sec: Section | None, tool: str) -> Tool | None:
    """The tool (or daemon) a section shows missing: then the test measured nothing."""
    return None if sec is None else missing(tool, sec.rc, sec.out, sec.err)


def not_run(test: str, node: str, tool: Tool, component: str = "", unit: str = "") -> Measurement:
    """A test whose tool is missing: an error naming the tool and its role, no value, no suspect."""
    return Measurement(
        test,
        node,
        component,
        unit=unit or TESTS_UNIT.get(test, ""),
        error=cannot_certify(tool),
        detail={"missing": tool.name, "install": tool.install},
    )


TESTS_UNIT = {"dcgm.diag": "pass", "all_reduce.node": "GB/s", "ib_write_bw.loopback": "Gb/s"}
#: the section key -> the program it runs first
SECTION_TOOL = {
    "dcgm": "dcgmi",
    "nvbandwidth": "nvbandwidth",
    "allreduce": "all_reduce_perf",
    "ecc": "nvidia-smi",
}


def parse_node(node: NodeExpect, sections: dict[str, Section], opts: SuiteOptions) -> NodeSample:
    n, s = node.name, NodeSample()
    ms = s.measurements
    gone = {k: absent(sections.get(k), t) for k, t in SECTION_TOOL.items()}
    gone |= {
        f"loopback.{r.index}": absent(sections.get(f"loopback.{r.index}"), "ib_write_bw") for r in node.rails
    }
    diag, err = (None, "") if gone["dcgm"] else _parsed(sections.get("dcgm"), "dcgmi diag", dcgmi.parse_diag)
    if diag is not None and diag.complete and any(t.result == "Pass" for t in diag.tests):
        failed = {
            t.name: sorted(g for g, r in t.per_gpu.items() if r == "Fail")
            for t in diag.tests
            if t.result == "Fail"
        } | {name: [] for name in diag.failures() if name.endswith("(Error)")}  # category-level Error rows
        ms.append(
            Measurement(
                "dcgm.diag",
                n,
                value=0.0 if failed else 1.0,
                unit="pass",
                detail={
                    "level": opts.dcgm_level,
                    "failed": failed,
                    "warned": [t.name for t in diag.tests if t.result == "Warn"],
                },
            )
        )
        if diag.dcgm_version:
            s.tool_versions["dcgm"] = diag.dcgm_version
    elif (tool := gone["dcgm"]) is not None:
        ms.append(not_run("dcgm.diag", n, tool))
    else:
        aborted = (
            f"dcgmi diag aborted: {' | '.join(diag.errors)}" if diag is not None and diag.aborted else ""
        )
        ms.append(
            Measurement("dcgm.diag", n, unit="pass", error=err or aborted or "dcgmi diag: no test passed")
        )
    if (tool := gone["nvbandwidth"]) is not None:
        ms += [not_run(f"nvbandwidth.{short}", n, tool, unit="GB/s") for short in NVB_CASES]
    else:
        ms += _nvbandwidth(node, sections.get("nvbandwidth"))
    for r in node.rails:
        tool = gone[f"loopback.{r.index}"]
        sec = sections.get(f"loopback.{r.index}")
        ms.append(
            not_run("ib_write_bw.loopback", n, tool, f"rail{r.index}") if tool else _loopback(n, r, sec)
        )
    if (tool := gone["allreduce"]) is not None:
        ms.append(not_run("all_reduce.node", n, tool))
    else:
        ms.append(_allreduce(n, sections.get("allreduce"), int(node.gpu["count"])))
    if (tool := gone["ecc"]) is not None:
        ms += [not_run(t, n, tool, unit="count") for t in ("ecc.corrected", "ecc.uncorrected")]
    else:
        ms += _ecc(node, sections.get("ecc"), s)
    ms += _counters(node, sections.get("counters"), s)
    return s


def _nvbandwidth(node: NodeExpect, sec: Section | None) -> list[Measurement]:
    res, err = _parsed(sec, "nvbandwidth", nvbandwidth.parse)
    gpus = range(int(node.gpu["count"]))
    out = []
    for short, case in NVB_CASES.items():
        test = f"nvbandwidth.{short}"
        tc = res.testcases.get(case) if res is not None else None
        if tc is None or tc.waived:
            out += [
                Measurement(test, node.name, f"gpu{g}", unit="GB/s", error=err or f"no {case} result")
                for g in gpus
            ]
            continue
        for g in gpus:
            if short == "d2d":  # GPU g reading from every other GPU: the median of its row
                vals = [v for c, v in (tc.matrix.get(g) or {}).items() if c != g and v is not None]
            else:
                vals = [v for v in [(tc.matrix.get(0) or {}).get(g)] if v is not None]
            out.append(
                Measurement(
                    test,
                    node.name,
                    f"gpu{g}",
                    value=statistics.median(vals) if vals else None,
                    unit="GB/s",
                    error="" if vals else f"no value for GPU {g} in {case}",
                )
            )
    return out


def _loopback(node: str, rail: Rail, sec: Section | None) -> Measurement:
    res, err = _parsed(sec, f"ib_write_bw {rail.hca}", perftest.parse_bw)
    comp = f"rail{rail.index}"
    if res is None or res.header.errors or not res.header.completed or not res.rows:
        why = err or "; ".join(res.header.errors)[:200] or "did not complete"
        return Measurement(
            "ib_write_bw.loopback", node, comp, unit="Gb/s", error=why, detail={"hca": rail.hca}
        )
    row = max(res.rows, key=lambda x: x.bytes)
    return Measurement(
        "ib_write_bw.loopback",
        node,
        comp,
        value=round(row.bw_average_gbps, 3),
        unit="Gb/s",
        detail={"hca": rail.hca, "gpu": rail.gpu, "bytes": row.bytes},
    )


def nccl_measurement(test: str, node: str, text: str | None, err: str, peer: str = "") -> Measurement:
    """Bus bandwidth of the largest size (out-of-place or in-place, the better), from nccl-tests output."""
    if not text or not text.strip():
        return Measurement(test, node, peer=peer, unit="GB/s", error=err or "no output")
    try:
        res = nccl_tests.parse(text)
    except ParseError as exc:
        why = f"unparsable all_reduce_perf output: {exc}"
        return Measurement(test, node, peer=peer, unit="GB/s", error=f"{err}; {why}" if err else why)
    if res.errors or not res.rows:
        return Measurement(
            test, node, peer=peer, unit="GB/s", error="; ".join(res.errors)[:300] or "no result rows"
        )
    if res.wrong_total:
        return Measurement(
            test, node, peer=peer, unit="GB/s", error=f"data check failed: #wrong {res.wrong_total}"
        )
    row = max(res.rows, key=lambda x: x.size_bytes)
    busbw = max(row.out_of_place.busbw_gbps, row.in_place.busbw_gbps)
    return Measurement(
        test,
        node,
        peer=peer,
        value=busbw,
        unit="GB/s",
        detail={"size_bytes": row.size_bytes, "ranks": len(res.ranks), "nccl": res.nccl_version},
    )


def _allreduce(node: str, sec: Section | None, gpus: int) -> Measurement:
    err = "" if sec is not None and sec.rc == 0 else _fail(sec, "all_reduce_perf")
    m = nccl_measurement("all_reduce.node", node, sec.out if sec else None, err)
    if m.ok and sec is not None and sec.rc != 0:
        return Measurement(m.test, node, unit="GB/s", error=_fail(sec, "all_reduce_perf"))
    return m


def _ecc(node: NodeExpect, sec: Section | None, s: NodeSample) -> list[Measurement]:
    rows, err = _parsed(sec, "nvidia-smi --query-gpu", lambda t: parse_query_csv(t, ECC_FIELDS))
    if rows is None:
        return [
            Measurement(t, node.name, unit="count", error=err) for t in ("ecc.corrected", "ecc.uncorrected")
        ]
    out = []
    for row in rows:
        g = int(str(row["index"]))
        if row.get("serial"):
            s.gpu_serials[g] = str(row["serial"])
        for kind in ("corrected", "uncorrected"):
            agg, vol = (
                row.get(f"ecc.errors.{kind}.aggregate.total"),
                row.get(f"ecc.errors.{kind}.volatile.total"),
            )
            value = agg if isinstance(agg, int | float) else vol
            out.append(
                Measurement(
                    f"ecc.{kind}",
                    node.name,
                    f"gpu{g}",
                    unit="count",
                    value=float(value) if isinstance(value, int | float) else None,
                    error="" if isinstance(value, int | float) else "ECC counter not reported",
                    detail={"volatile": vol, "aggregate": agg, "serial": row.get("serial")},
                )
            )
    return out


def _counters(node: NodeExpect, sec: Section | None, s: NodeSample) -> list[Measurement]:
    if sec is None:
        return []
    out = []
    for line in sec.out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "guid":
            s.nic_guids[int(parts[1])] = parts[2]
        elif len(parts) == 4 and parts[0] == "c" and parts[3].isdigit():
            out.append(
                Measurement(
                    COUNTER_PREFIX + parts[2],
                    node.name,
                    f"rail{parts[1]}",
                    value=float(parts[3]),
                    unit="count",
                    detail={"guid": s.nic_guids.get(int(parts[1]))},
                )
            )
    return out
