"""A node's iteration output (`suite.split_sections`) parsed with `clusterforge.hw` into measurements.

A test whose tool is missing, crashed, hung or printed nothing usable measures nothing: it gives an error
naming the tool (`unmeasured`), never a value or a failure. A failure the tool reported itself (a DCGM
test that failed, perftest's completion error, nccl-tests' ``#wrong``) is a measurement.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from clusterforge.burnin import storage
from clusterforge.burnin.model import COUNTER_PREFIX, Measurement
from clusterforge.burnin.suite import ECC_FIELDS, NVB_CASES, NodeSample, Section, SuiteOptions, steps
from clusterforge.burnin.unmeasured import not_run, unmeasured, why_unmeasured
from clusterforge.hw import ParseError, dcgmi, nccl_tests, nvbandwidth, perftest
from clusterforge.hw.nvidia_smi import parse_query_csv
from clusterforge.plan.expect import NodeExpect, Rail
from clusterforge.remote.tools import Tool, missing


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


def _why(sec: Section | None, usable: bool, timeout_s: float | None = None) -> str:
    """Why a section's tool measured nothing ('' when it measured): see `unmeasured.why_unmeasured`."""
    if sec is None:
        return why_unmeasured(None, "", "", False)
    return why_unmeasured(sec.rc, sec.out, sec.err, usable, timeout_s)


def absent(sec: Section | None, tool: str) -> Tool | None:
    """The tool (or daemon) a section shows missing: then the test measured nothing."""
    return None if sec is None else missing(tool, sec.rc, sec.out, sec.err)


#: the section key -> the program it runs first
SECTION_TOOL = {
    "dcgm": "dcgmi",
    "nvbandwidth": "nvbandwidth",
    "allreduce": "all_reduce_perf",
    "ecc": "nvidia-smi",
}


def parse_node(node: NodeExpect, sections: dict[str, Section], opts: SuiteOptions) -> NodeSample:
    """One node's measurements. A test whose tool is missing, crashed, hung or printed nothing usable
    gives an error naming the tool (`unmeasured`), never a value or a failure."""
    n, s = node.name, NodeSample()
    ms = s.measurements
    limit = {key: float(t) for key, t, _cmd in steps(node, opts)}  # each section's timeout
    gone = {k: absent(sections.get(k), t) for k, t in SECTION_TOOL.items()}
    gone |= {
        f"loopback.{r.index}": absent(sections.get(f"loopback.{r.index}"), "ib_write_bw") for r in node.rails
    }
    if (tool := gone["dcgm"]) is not None:
        ms.append(not_run("dcgm.diag", n, tool))
    else:
        ms.append(_dcgm(n, sections.get("dcgm"), s, opts, limit["dcgm"]))
    if (tool := gone["nvbandwidth"]) is not None:
        ms += [not_run(f"nvbandwidth.{short}", n, tool, unit="GB/s") for short in NVB_CASES]
    else:
        ms += _nvbandwidth(node, sections.get("nvbandwidth"), limit["nvbandwidth"])
    for r in node.rails:
        tool = gone[f"loopback.{r.index}"]
        sec = sections.get(f"loopback.{r.index}")
        ms.append(
            not_run("ib_write_bw.loopback", n, tool, f"rail{r.index}")
            if tool
            else _loopback(n, r, sec, limit[f"loopback.{r.index}"])
        )
    if (tool := gone["allreduce"]) is not None:
        ms.append(not_run("all_reduce.node", n, tool))
    else:
        ms.append(_allreduce(n, sections.get("allreduce"), limit["allreduce"]))
    if opts.storage:
        ms += storage.measurements(node, sections, limit, s.tool_versions)
    if (tool := gone["ecc"]) is not None:
        ms += [not_run(t, n, tool, unit="count") for t in ("ecc.corrected", "ecc.uncorrected")]
    else:
        ms += _ecc(node, sections.get("ecc"), s, limit["ecc"])
    ms += _counters(node, sections.get("counters"), s)
    return s


def _dcgm(n: str, sec: Section | None, s: NodeSample, opts: SuiteOptions, limit: float) -> Measurement:
    """`dcgmi diag -j`: a finished run (its tests' results, a failed test named with its GPUs); an aborted,
    hung, crashed or cut-short one measured nothing."""
    diag, _err = _parsed(sec, "dcgmi diag", dcgmi.parse_diag)
    why = _why(sec, diag is not None and not diag.aborted and diag.complete, limit)
    if diag is not None and diag.aborted and not why.startswith("timed out"):
        why = f"aborted: {' | '.join(diag.errors)[:300]}"
    if why:
        return unmeasured("dcgm.diag", n, "dcgmi diag", why)
    assert diag is not None
    if diag.dcgm_version:
        s.tool_versions["dcgm"] = diag.dcgm_version
    if not any(t.result == "Pass" for t in diag.tests):
        return Measurement("dcgm.diag", n, unit="pass", error="dcgmi diag: no test passed")
    failed = {
        t.name: sorted(g for g, r in t.per_gpu.items() if r == "Fail")
        for t in diag.tests
        if t.result == "Fail"
    } | {name: [] for name in diag.failures() if name.endswith("(Error)")}  # category-level Error rows
    return Measurement(
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


def _nvbandwidth(node: NodeExpect, sec: Section | None, limit: float | None = None) -> list[Measurement]:
    res, err = _parsed(sec, "nvbandwidth", nvbandwidth.parse)
    gpus = range(int(node.gpu["count"]))
    why = _why(sec, res is not None, limit)
    if why:
        return [unmeasured(f"nvbandwidth.{short}", node.name, "nvbandwidth", why) for short in NVB_CASES]
    out = []
    for short, case in NVB_CASES.items():
        test = f"nvbandwidth.{short}"
        tc = res.testcases.get(case)
        if tc is None:  # it stopped before this case, or does not know it
            rc = f" (exit {sec.rc})" if sec is not None and sec.rc else ""
            out.append(unmeasured(test, node.name, "nvbandwidth", f"printed no {case} result{rc}"))
            continue
        if tc.waived:  # the tool says the case cannot run here (e.g. no peer access between the GPUs)
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


def _loopback(node: str, rail: Rail, sec: Section | None, limit: float | None = None) -> Measurement:
    """GPUDirect loopback on one rail: a finished run, or a failure perftest reported itself (``Completion
    with error`` …); a run cut short without one, hung or unparsable measured nothing."""
    res, _err = _parsed(sec, f"ib_write_bw {rail.hca}", perftest.parse_bw)
    comp, detail = f"rail{rail.index}", {"hca": rail.hca}
    usable = res is not None and bool(res.header.errors or (res.header.completed and res.rows))
    why = _why(sec, usable, limit)
    if why:
        return unmeasured("ib_write_bw.loopback", node, "ib_write_bw", why, comp, detail=detail)
    assert res is not None
    if res.header.errors or not res.header.completed or not res.rows:
        why = "; ".join(res.header.errors)[:200] or "did not complete"
        return Measurement("ib_write_bw.loopback", node, comp, unit="Gb/s", error=why, detail=detail)
    row = max(res.rows, key=lambda x: x.bytes)
    return Measurement(
        "ib_write_bw.loopback",
        node,
        comp,
        value=round(row.bw_average_gbps, 3),
        unit="Gb/s",
        detail=detail | {"gpu": rail.gpu, "bytes": row.bytes},
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


def allreduce_measurement(
    test: str,
    node: str,
    rc: int | None,
    out: str,
    err: str,
    peer: str = "",
    timeout_s: float | None = None,
    tool: str = "all_reduce_perf",
) -> Measurement:
    """An `all_reduce_perf` run (``rc`` None: it never ran): a finished table, or a failure nccl-tests
    reported itself (``Test NCCL failure`` lines, ``#wrong`` > 0); a crash, a hang or a table cut short
    measured nothing."""
    try:
        res: nccl_tests.NcclResult | None = nccl_tests.parse(out) if out.strip() else None
    except ParseError:
        res = None
    reported = res is not None and bool(res.errors or res.wrong_total)
    usable = res is not None and bool(reported or (res.rows and rc == 0))
    why = why_unmeasured(rc, out, err, usable, timeout_s)
    if why:
        return unmeasured(test, node, tool, why, peer=peer)
    return nccl_measurement(test, node, out, "", peer=peer)


def _allreduce(node: str, sec: Section | None, limit: float) -> Measurement:
    if sec is None:
        return allreduce_measurement("all_reduce.node", node, None, "", "")
    return allreduce_measurement("all_reduce.node", node, sec.rc, sec.out, sec.err, timeout_s=limit)


def _ecc(node: NodeExpect, sec: Section | None, s: NodeSample, limit: float) -> list[Measurement]:
    rows, _err = _parsed(sec, "nvidia-smi --query-gpu", lambda t: parse_query_csv(t, ECC_FIELDS))
    why = _why(sec, rows is not None, limit)
    if why:
        return [unmeasured(t, node.name, "nvidia-smi", why) for t in ("ecc.corrected", "ecc.uncorrected")]
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
