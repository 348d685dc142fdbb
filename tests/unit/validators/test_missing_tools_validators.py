"""Full-tier validators on a node that lacks the tool: verdict error naming the tool and the role/tag that
installs it, never fail; the same check fails when the tool ran and measured low (both directions)."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckFailed, ToolMissing
from clusterforge.certify.plugin import classify
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

perf = validator("performance")
rdma = validator("rdma")
NVB = "nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt"
D2D = "nvbandwidth -t device_to_device_memcpy_read_ce"


def _classified(exc: pytest.ExceptionInfo[BaseException], node: str = "ib-01") -> dict:
    return classify(exc, "call", node)


def test_nvbandwidth_missing_is_error_with_role(ib_node: NodeExpect) -> None:
    node = FakeNode({})  # nothing installed: every command exits 127 "not found"
    with pytest.raises(ToolMissing) as exc:
        perf.test_nvbandwidth(ib_node, node, "d2d")
    assert str(exc.value).startswith(
        "cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks) on n1"
    )
    assert len(node.asked) == 1  # not retried perf_attempts times
    rec = _classified(exc)
    assert rec["verdict"] == "error" and rec["missing"] == "nvbandwidth"
    assert rec["fix"] == "run `clusterforge provision --tags benchmarks --limit ib-01` (role benchmarks)"


def test_nvbandwidth_measured_low_fails(ib_node: NodeExpect) -> None:
    strict = ib_node.__class__(
        **{
            **ib_node.__dict__,
            "sku": {
                **ib_node.sku,
                "thresholds": {
                    **ib_node.sku["thresholds"],
                    "d2d_gbs": {"value": 10000.0, "unit": "GB/s", "source": "test"},
                },
            },
        }
    )
    with pytest.raises(CheckFailed) as exc:
        perf.test_nvbandwidth(strict, FakeNode({D2D: (0, real(NVB))}), "d2d")
    assert _classified(exc)["verdict"] == "fail"


def test_dcgm_host_engine_down_is_error(ib_node: NodeExpect) -> None:
    down = (
        "Error: unable to establish a connection to the specified host: localhost\n"
        "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
    )
    with pytest.raises(ToolMissing, match=r"nv-hostengine not running \(install and start: role nvidia_gpu"):
        perf.test_dcgm_diag(ib_node, FakeNode({"dcgmi diag -r 2 -j": (255, down)}))


def test_ib_write_bw_missing_is_error(ib_node: NodeExpect) -> None:
    cmd = perf._ib_cmd(ib_node, 0)
    node = FakeNode({cmd: (127, "")})
    node._exec = lambda c, t: (127, "", "sh: 1: ib_write_bw: not found\n")  # type: ignore[method-assign]
    with pytest.raises(ToolMissing, match=r"ib_write_bw missing \(install: role rdma, tag rdma_packages\)"):
        perf.test_ib_write_bw(ib_node, node, 0)


def test_mlnx_qos_missing_is_error(roce_node: NodeExpect) -> None:
    with pytest.raises(ToolMissing, match=r"mlnx_qos missing \(install: role rdma, tag roce_qos\)"):
        rdma.test_roce_qos(roce_node, FakeNode({}), 0)
