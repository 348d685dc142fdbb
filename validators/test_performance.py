"""Full tier: DCGM diagnostics at the policy's level, nvbandwidth H2D/D2H/D2D, ib_write_bw per rail
(GPUDirect loopback), single-node all_reduce bus bandwidth. Measurements get `perf_attempts` tries, pass
on the first at or above the SKU threshold, and every attempt is recorded."""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, Probe, expect, expect_none_bad, measure
from clusterforge.certify.fixes import hint
from clusterforge.hw import dcgmi, nccl_tests, nvbandwidth, perftest
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import argv, shell

pytestmark = [pytest.mark.full, pytest.mark.burnin]

#: DCGM's own duration per level (docs: r1 seconds, r2 ~2 min, r3 ~15 min, r4 longer) with headroom
DCGM_TIMEOUT_S = {1: 120, 2: 600, 3: 2400, 4: 7200}
NVB_TIMEOUT_S = 300
IB_TIMEOUT_S = 120
NCCL_TIMEOUT_S = 600
NVB_CASES = {
    "h2d": ("host_to_device_memcpy_ce", "h2d_gbs", "per GPU"),
    "d2h": ("device_to_host_memcpy_ce", "d2h_gbs", "per GPU"),
    "d2d": ("device_to_device_memcpy_read_ce", "d2d_gbs", "per GPU pair"),
}


def test_dcgm_diag(node: NodeExpect, probe: Probe) -> None:
    level = int(node.certification.get("dcgm_level", 2))
    cmd = argv("dcgmi", "diag", "-r", level, "-j")
    diag = probe.parse(
        cmd,
        dcgmi.parse_diag,
        timeout=max(node.timeout, DCGM_TIMEOUT_S.get(level, 7200)),
        ok=(0, 1, 226),
        cache=False,
    )
    if diag.aborted:
        raise CheckError(f"`{cmd}` aborted before any result: {' | '.join(diag.errors)}")
    if not diag.complete or not any(t.result == "Pass" for t in diag.tests):
        raise CheckError(
            f"`{cmd}` reported no passing test (incomplete or all skipped): "
            + ", ".join(f"{t.name}={t.result}" for t in diag.tests)
        )
    probe.note("dcgm_version", diag.dcgm_version)
    probe.note("tests", {t.name: t.result for t in diag.tests})
    bad = {name: text[:200] for name, text in diag.failures().items()}
    expect_none_bad(
        f"dcgmi diag -r {level}",
        bad,
        "every test Pass (Warn/Skip recorded)",
        hint("gpu_hw", node.name),
        limit=4,
    )


@pytest.mark.parametrize("case", sorted(NVB_CASES))
def test_nvbandwidth(node: NodeExpect, probe: Probe, case: str) -> None:
    testcase, threshold_name, scope = NVB_CASES[case]
    thr = node.threshold(threshold_name)

    def once() -> tuple[float, dict[str, Any]]:
        res = probe.parse(
            argv("nvbandwidth", "-t", testcase), nvbandwidth.parse, timeout=NVB_TIMEOUT_S, cache=False
        )
        if testcase not in res.testcases or res[testcase].waived or not res[testcase].values():
            raise CheckError(f"nvbandwidth printed no result for {testcase}")
        tc = res[testcase]
        worst = min(tc.values())
        low = {
            f"{r}->{c}": v
            for r, row in tc.matrix.items()
            for c, v in row.items()
            if v is not None and v < thr.value
        }
        return worst, {"min": worst, "sum": tc.sum, "below": low}

    measure(
        probe,
        f"nvbandwidth {testcase} ({scope}, worst)",
        node.perf_attempts,
        thr.value,
        thr.unit,
        once,
        hint("pcie_hw" if case != "d2d" else "nvlink_hw", node.name) + f"; threshold source: {thr.source}",
    )


def _ib_cmd(node: NodeExpect, rail: int) -> str:
    """GPUDirect loopback on one HCA (Azure NHC's check_ib_bw_gdr): a server, then a client to it on the
    same port, retried for a few seconds until the server listens (not when ib_write_bw is missing); the
    server is stopped afterwards. The arguments are positional parameters of the snippet (``set --``)."""
    r = node.rail(rail)
    gid = ["-x", node.knobs["nccl_ib_gid_index"]] if node.roce and "nccl_ib_gid_index" in node.knobs else []
    args = ["-d", r.hca, "-i", r.port, *gid, "-s", 8388608, "-F", "--report_gbits", "-D", 2]
    args += [f"--use_cuda={r.gpu}", "-p", 18515 + rail]
    return (
        argv("set", "--", *args)
        + "; "
        + shell(
            'e=$(mktemp); ib_write_bw "$@" >/dev/null 2>&1 & srv=$!; rc=1; n=0; '
            'while [ $n -lt 25 ]; do out=$(ib_write_bw "$@" 127.0.0.1 2>$e); rc=$?; '
            "[ $rc -eq 0 ] || [ $rc -eq 127 ] && break; "
            "n=$((n+1)); sleep 0.2; done; kill $srv 2>/dev/null; wait $srv 2>/dev/null; "
            """printf '%s\\n' "$out"; cat $e >&2; rm -f $e; exit $rc"""
        )
    )


def test_ib_write_bw(node: NodeExpect, probe: Probe, rail: int) -> None:
    thr = node.threshold("ib_write_bw_gbps")
    cmd = _ib_cmd(node, rail)

    def once() -> tuple[float, dict[str, Any]]:
        res = probe.parse(cmd, perftest.parse_bw, timeout=IB_TIMEOUT_S, cache=False)
        if res.header.errors or not res.header.completed or not res.rows:
            raise CheckError(f"ib_write_bw did not complete: {'; '.join(res.header.errors)[:300]}")
        row = max(res.rows, key=lambda x: x.bytes)
        return row.bw_average_gbps, {"bytes": row.bytes, "peak_gbps": round(row.bw_peak_gbps, 2)}

    r = node.rail(rail)
    measure(
        probe,
        f"ib_write_bw {r.hca} GPU{r.gpu} loopback (rail {rail})",
        node.perf_attempts,
        thr.value,
        thr.unit,
        once,
        hint("link_hw", node.name) + f"; threshold source: {thr.source}",
    )


def test_all_reduce(node: NodeExpect, probe: Probe) -> None:
    thr = node.threshold("allreduce_busbw_gbs")
    n = int(node.gpu["count"])
    cmd = argv("all_reduce_perf", "-b", "16G", "-e", "16G", "-f", 2, "-g", n, "-w", 5, "-n", 20)

    def once() -> tuple[float, dict[str, Any]]:
        res = probe.parse(cmd, nccl_tests.parse, timeout=NCCL_TIMEOUT_S, cache=False)
        if res.errors or not res.rows:
            raise CheckError(f"all_reduce_perf failed: {'; '.join(res.errors)[:300] or 'no result rows'}")
        expect(
            not res.wrong_total,
            "all_reduce_perf data check",
            "#wrong 0",
            res.wrong_total,
            hint("gpu_hw", node.name),
        )
        row = max(res.rows, key=lambda x: x.size_bytes)
        busbw = max(row.out_of_place.busbw_gbps, row.in_place.busbw_gbps)
        return busbw, {"size_bytes": row.size_bytes, "ranks": len(res.ranks), "nccl": res.nccl_version}

    measure(
        probe,
        f"all_reduce_perf busbw ({n} GPUs, 16 GiB)",
        node.perf_attempts,
        thr.value,
        thr.unit,
        once,
        hint("perf", node.name) + f"; threshold source: {thr.source}",
    )
