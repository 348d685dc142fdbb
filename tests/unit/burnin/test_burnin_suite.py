"""The node script run for real (bash, timeout) with stub tools that print real captures, then parsed."""

from __future__ import annotations

import copy
import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clusterforge.burnin import measure, suite
from clusterforge.hw import nvbandwidth
from clusterforge.plan.expect import NodeExpect, node_expect
from tests.conftest import REAL

NCCL = REAL / "nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt"
STUBS = {
    "dcgmi": f"cat {REAL / 'dcgmi-diag-json__r2-1gpu-virtualclient__3.txt'}",
    "nvbandwidth": f"cat {REAL / 'nvbandwidth__2gpu-v0.10-azurenhc-testdata__2.txt'}",
    # server (no address argument): say it waits, as perftest does; client: a real capture
    "ib_write_bw": 'case "$*" in *127.0.0.1*) cat {bw};; *) echo "* Waiting for client to connect... *"; '
    "sleep 0.3;; esac",
    "all_reduce_perf": f"cat {NCCL}",
    "nvidia-smi": "printf '0, 1650923000100, 0, 0, 3, 0\\n1, 1650923000101, [N/A], 0, 7, 0\\n'",
}
BW = REAL / "ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt"


@pytest.fixture
def node(lab_plan: dict[str, Any]) -> NodeExpect:
    """roce-01 with a 2-GPU SKU (the nvbandwidth capture has 2 GPUs) and the RoCE GID index knob."""
    doc = copy.deepcopy(lab_plan)
    entry = next(n for n in doc["nodes"] if n["name"] == "roce-01")
    doc["skus"][entry["sku"]]["gpu"]["count"] = 2
    return node_expect(doc, entry, {"nccl_ib_gid_index": 3})


def run_script(tmp_path: Path, node: NodeExpect, opts: suite.SuiteOptions, stubs: dict[str, str]) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in stubs.items():
        f = bin_dir / name
        f.write_text("#!/bin/sh\n" + body.replace("{bw}", str(BW)) + "\n")
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    text, deadline = suite.script(node, opts)
    p = subprocess.run(
        ["bash", "-s"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"),
    )
    assert p.returncode == 0, p.stderr
    assert deadline > sum(t for _, t, _ in suite.steps(node, opts))
    return p.stdout


def fake_sysfs(root: Path, node: NodeExpect) -> None:
    for r in node.rails:
        port = root / r.hca / "ports" / str(r.port) / "counters"
        port.mkdir(parents=True)
        (root / r.hca / "node_guid").write_text(f"b8ce:f603:00a1:{r.index:04x}\n")
        for c in suite.SuiteOptions().counters:
            (port / c).write_text("17\n" if (r.index, c) == (2, "symbol_error") else "0\n")


def test_script_sections_parse_into_measurements(tmp_path: Path, node: NodeExpect) -> None:
    fake_sysfs(tmp_path / "ib", node)
    # the GPU, NIC and counter steps; the storage steps (the lab spec declares storage) have their own tests
    # in test_burnin_storage.py
    opts = suite.SuiteOptions(ib_sysfs=str(tmp_path / "ib"), storage=False)
    out = run_script(tmp_path, node, opts, STUBS)
    sections = suite.split_sections(out)
    assert list(sections) == [
        "dcgm",
        "nvbandwidth",
        *[f"loopback.{i}" for i in range(8)],
        "allreduce",
        "ecc",
        "counters",
    ]
    assert all(s.rc == 0 for s in sections.values())
    sample = measure.parse_node(node, sections, opts)
    by = {(m.test, m.component): m for m in sample.measurements}
    assert by[("dcgm.diag", "")].value == 1.0
    nvb = nvbandwidth.parse((REAL / "nvbandwidth__2gpu-v0.10-azurenhc-testdata__2.txt").read_text())
    assert by[("nvbandwidth.h2d", "gpu1")].value == nvb.testcases["host_to_device_memcpy_ce"].matrix[0][1]
    assert (
        by[("nvbandwidth.d2d", "gpu1")].value == nvb.testcases["device_to_device_memcpy_read_ce"].matrix[1][0]
    )
    assert by[("nvbandwidth.d2d", "gpu0")].ok
    loop = by[("ib_write_bw.loopback", "rail5")]
    assert (
        loop.value == pytest.approx(23317.65 * 1048576 * 8 / 1e9, rel=1e-3) and loop.detail["hca"] == "mlx5_5"
    )
    assert by[("all_reduce.node", "")].value == pytest.approx(479.93, abs=0.5)
    assert (
        by[("ecc.corrected", "gpu0")].value == 0 and by[("ecc.corrected", "gpu1")].value == 7
    )  # volatile: no agg
    assert sample.gpu_serials == {0: "1650923000100", 1: "1650923000101"}
    assert by[("ibcounter.symbol_error", "rail2")].value == 17
    assert sample.nic_guids[7] == "b8ce:f603:00a1:0007"
    assert all(m.ok for m in sample.measurements), [m for m in sample.measurements if not m.ok]


def test_commands_follow_the_plan(node: NodeExpect) -> None:
    cmds = dict((k, c) for k, _, c in suite.steps(node, suite.SuiteOptions(dcgm_level=3)))
    assert cmds["dcgm"] == "dcgmi diag -r 3 -j"
    assert "-d mlx5_4 -i 1 -x 3 -s 8388608" in cmds["loopback.4"] and "--use_cuda=4" in cmds["loopback.4"]
    assert "-p 18519" in cmds["loopback.4"] and cmds["allreduce"].endswith("-g 2")
    assert "-t host_to_device_memcpy_ce" in cmds["nvbandwidth"]


def test_hung_tool_times_out_and_missing_tools_are_errors(tmp_path: Path, node: NodeExpect) -> None:
    stubs = dict(STUBS, nvbandwidth="sleep 30")
    del stubs["all_reduce_perf"]
    opts = suite.SuiteOptions(nvb_timeout_s=1, ib_sysfs=str(tmp_path / "none"))
    sections = suite.split_sections(run_script(tmp_path, node, opts, stubs))
    assert sections["nvbandwidth"].rc == 124
    ms = measure.parse_node(node, sections, opts).measurements
    nvb = [m for m in ms if m.test.startswith("nvbandwidth")]
    # one error per case, no GPU named: a hung tool measured nothing
    assert len(nvb) == 3 and all(m.error == "cannot certify: nvbandwidth timed out after 1 s" for m in nvb)
    assert all(m.unmeasured == "nvbandwidth" and not m.component for m in nvb)
    ar = next(m for m in ms if m.test == "all_reduce.node")
    assert not ar.ok and ar.missing == "all_reduce_perf"
    assert ar.error == "cannot certify: all_reduce_perf missing (install: role benchmarks, tag benchmarks)"
    assert not any(m.test.startswith("ibcounter.") for m in ms)  # unreadable counters: nothing invented


def test_no_output_at_all_is_an_error_for_every_test(node: NodeExpect) -> None:
    ms = measure.parse_node(node, {}, suite.SuiteOptions())
    assert ms.measurements and not any(m.ok for m in ms.measurements)
    assert all(m.unmeasured and "did not run" in m.error for m in ms.measurements)
    assert {m.test for m in ms.measurements} >= {
        "dcgm.diag",
        "nvbandwidth.h2d",
        "ib_write_bw.loopback",
        "all_reduce.node",
        "ecc.corrected",
    }


def test_failed_perftest_and_nccl_data_errors(node: NodeExpect) -> None:
    failed = (REAL / "ib_write_bw__h200-gke-roce-host-a-failed-dranet__1.txt").read_text()
    sec = suite.Section(1, failed, "")
    m = measure._loopback("roce-01", node.rail(0), sec)
    assert not m.ok and m.error
    row = "31322  274.24  479.93      0    31322"
    bad = NCCL.read_text().replace(row, row.replace("      0 ", "      3 "))
    assert bad != NCCL.read_text()
    m = measure.nccl_measurement("all_reduce.node", "n", bad, "")
    assert not m.ok and m.error == "data check failed: #wrong 3"
    assert measure.nccl_measurement("all_reduce.node", "n", "garbage", "").error.startswith("unparsable")
    assert replace(suite.SuiteOptions(), dcgm_level=4).dcgm_level == 4
