"""Full-tier validators on real captures: nvbandwidth D2D on 8x H100 (tests/fixtures/real/
nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt), nccl-tests all_reduce on 8x H100
(nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt, 479.93 GB/s at 8 GiB), dcgmi diag r2 on an H100
(dcgmi-diag__h100-gke-a3-dcgm338-elideng__1.txt), ib_write_bw on HDR (ib_write_bw__a100-ib-hdr-cx6-mlx5_0-
cpufreq-warn-brevdoc__3.txt, ~195.6 Gb/s: under the IB SKU's 380 Gb/s floor). Attempts are recorded."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

perf = validator("performance")
NVB = "nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt"
NCCL = "nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt"
IBBW = "ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt"
DCGM = "dcgmi-diag__h100-gke-a3-dcgm338-elideng__1.txt"
ALL_REDUCE = "all_reduce_perf -b 16G -e 16G -f 2 -g 8 -w 5 -n 20"


def test_nvbandwidth_d2d_passes_first_attempt(ib_node: NodeExpect) -> None:
    node = FakeNode({"nvbandwidth -t device_to_device_memcpy_read_ce": (0, real(NVB))})
    perf.test_nvbandwidth(ib_node, node, "d2d")
    assert len(node.attempts) == 1 and node.attempts[0].passed


def test_nvbandwidth_missing_testcase_is_error(ib_node: NodeExpect) -> None:
    node = FakeNode({"nvbandwidth -t host_to_device_memcpy_ce": (0, real(NVB))})  # prints only D2D
    with pytest.raises(CheckError, match="no attempt produced a measurement"):
        perf.test_nvbandwidth(ib_node, node, "h2d")
    assert len(node.attempts) == ib_node.perf_attempts


def test_all_reduce_threshold(ib_node: NodeExpect) -> None:
    perf.test_all_reduce(ib_node, FakeNode({ALL_REDUCE: (0, real(NCCL))}))
    strict = ib_node.__class__(
        **{
            **ib_node.__dict__,
            "sku": {
                **ib_node.sku,
                "thresholds": {
                    **ib_node.sku["thresholds"],
                    "allreduce_busbw_gbs": {"value": 500.0, "unit": "GB/s", "source": "test"},
                },
            },
        }
    )
    node = FakeNode({ALL_REDUCE: (0, real(NCCL))})
    with pytest.raises(
        CheckFailed, match=r"expected >= 500 GB/s in one of 3 attempts; found 479.9, 479.9, 479.9"
    ):
        perf.test_all_reduce(strict, node)
    assert [a.passed for a in node.attempts] == [False, False, False]


def test_all_reduce_wrong_results_fail_at_once(ib_node: NodeExpect) -> None:
    text = real(NCCL).replace("479.93      0    31322", "479.93      3    31322", 1)
    node = FakeNode({ALL_REDUCE: (0, text)})
    with pytest.raises(CheckFailed, match="#wrong 0"):
        perf.test_all_reduce(ib_node, node)


def test_ib_write_bw_hdr_is_below_the_ndr_floor(ib_node: NodeExpect) -> None:
    node = FakeNode({perf._ib_cmd(ib_node, 0): (0, real(IBBW))})
    with pytest.raises(
        CheckFailed, match=r"expected >= 380 Gb/s in one of 3 attempts; found 195.6, 195.6, 195.6"
    ):
        perf.test_ib_write_bw(ib_node, node, 0)


def test_dcgm_diag(ib_node: NodeExpect) -> None:
    node = FakeNode({"dcgmi diag -r 2 -j": (0, real(DCGM))})
    perf.test_dcgm_diag(ib_node, node)
    with pytest.raises(CheckError, match="not recognised"):
        perf.test_dcgm_diag(ib_node, FakeNode({"dcgmi diag -r 2 -j": (0, "something else entirely")}))
    # dcgmi's abort (message format of DCGM's dcgmi Diag.cpp, constructed): error naming the text, not fail
    abort = (
        "Error: Unable to complete diagnostic for group 2147483647. "
        "Return: (-21) Host engine connection invalid/disconnected.\n"
    )
    with pytest.raises(CheckError, match=r"aborted before any result: .*Return: \(-21\) Host engine"):
        perf.test_dcgm_diag(ib_node, FakeNode({"dcgmi diag -r 2 -j": (226, abort)}))
