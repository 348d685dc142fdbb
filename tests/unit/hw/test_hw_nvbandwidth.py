"""nvbandwidth.parse on every ``nvbandwidth__*`` real capture (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nvbandwidth import parse

from .conftest import head

Real = Callable[[str], str]


def test_h100x8_v04_d2d_read(real: Real) -> None:
    """nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt - AlizeeChen11/azurehpc-health-checks:
    customTests/debugging-test-failure.md lines 124-155 @5b6e2ee7 (``./nvbandwidth -t
    device_to_device_memcpy_read_ce``)."""
    r = parse(real("nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt"))
    assert (r.version, r.driver_version, r.cuda_runtime_version, r.cuda_driver_version) == (
        "v0.4", "570.133.20", "12020", "12080")  # fmt: skip
    assert r.devices == {i: "NVIDIA H100 80GB HBM3" for i in range(8)}
    tc = r["device_to_device_memcpy_read_ce"]
    assert tc.unit == "GB/s" and tc.columns == tuple(range(8)) and tc.sum == 20785.58
    assert tc.matrix[0][0] is None and tc.matrix[0][1] == 370.90 and tc.matrix[7][0] == 370.51
    assert tc.matrix[2][4] == 372.96 and len(tc.values()) == 56 and min(tc.values()) == 370.26


def test_2gpu_v010_three_testcases(real: Real) -> None:
    """nvbandwidth__2gpu-v0.10-azurenhc-testdata__2.txt - Azure/azurehpc-health-checks:
    test/data/nvbandwidth_v0.10_output.txt @384f6659; no version header, v0.10 COEFFICIENT_OF_VARIATION
    lines."""
    r = parse(real("nvbandwidth__2gpu-v0.10-azurenhc-testdata__2.txt"))
    assert list(r.testcases) == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                                 "device_to_device_memcpy_read_ce"]  # fmt: skip
    h2d = r["host_to_device_memcpy_ce"]
    assert h2d.title == "memcpy CE CPU(row) -> GPU(column) bandwidth" and h2d.matrix == {
        0: {0: 26.03, 1: 25.94}
    }
    assert (h2d.sum, h2d.coefficient_of_variation) == (51.97, 0.01)
    d2d = r["device_to_device_memcpy_read_ce"]
    assert d2d.matrix == {0: {0: None, 1: 276.07}, 1: {0: 276.19, 1: None}} and d2d.sum == 552.26
    assert r["device_to_host_memcpy_ce"].coefficient_of_variation == 0.02 and r.version is None


def test_gb300_excerpt(real: Real) -> None:
    """nvbandwidth__gb300-dgxstation-c2c-stas00__excerpt4.txt - stas00/ml-engineering network/README.md
    lines 426-452 @29c6b708. EXCERPT between ``[...]`` markers; the last testcase has no SUM."""
    text = real("nvbandwidth__gb300-dgxstation-c2c-stas00__excerpt4.txt")
    with pytest.raises(ParseError, match="elided"):
        parse(text)
    r = parse(text, partial=True)
    assert (
        r["host_to_device_memcpy_ce"].matrix == {0: {0: 359.05}}
        and r["device_to_host_memcpy_ce"].sum == 377.15
    )
    assert r["host_to_device_bidirectional_memcpy_ce"].title == "memcpy CE CPU(row) <-> GPU(column) bandwidth"
    last = r["device_to_host_bidirectional_memcpy_ce"]
    assert last.matrix == {0: {0: 171.76}} and last.sum is None


def test_truncated_raises(real: Real) -> None:
    text = real("nvbandwidth__h100x8-azure-ndv5-v0.4-alizeechen__1.txt")
    with pytest.raises(ParseError, match="no SUM"):
        parse(head(text, 30))
    with pytest.raises(ParseError, match="no bandwidth matrix"):
        parse(head(text, 20))
    with pytest.raises(ParseError, match="no 'Running"):
        parse(head(text, 12))


@pytest.mark.parametrize(
    "text",
    [
        "garbage\n",
        "Running x_ce.\nmemcpy CE (GB/s)\n 0 1\n0 1.0 abc\n",
        "Running a_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0\n0 1.0\n\nSUM b_ce 1.0\n",
    ],
)
def test_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)
