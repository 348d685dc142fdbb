"""perftest.parse_bw / parse_lat on every ``ib_write_bw__*``, ``ib_read_lat__*`` and ``ib_write_lat__*``
real capture (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.perftest import parse_bw, parse_lat

from .conftest import head

Real = Callable[[str], str]


def test_bw_a100_hdr_mbsec_cpufreq(real: Real) -> None:
    """ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt - code-index capture log id 60859828466
    (``ib_write_bw -d mlx5_0 -a``); MB/sec report, a CPU-frequency warning before every row."""
    r = parse_bw(real("ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt"))
    h = r.header
    assert (h.test, h.device, h.link_type, h.mtu, h.gid_index) == (
        "RDMA_Write BW Test",
        "mlx5_0",
        "IB",
        4096,
        None,
    )
    assert (h.transport, h.connection, h.local_lid, h.remote_lid) == ("IB", "RC", "0x40", "0x6e")
    assert h.cpufreq_warnings == 23 and h.completed and h.errors == ()
    assert h.settings["CQ Moderation"] == "100" and h.settings["rdma_cm QPs"] == "OFF"
    assert r.unit == "MB/sec" and len(r.rows) == 23 and r.rows[0].bytes == 2 and r.rows[0].iterations == 5000
    last = r.rows[-1]
    assert (last.bytes, last.bw_peak, last.bw_average, last.msg_rate_mpps) == (
        8388608,
        23326.82,
        23317.65,
        0.002915,
    )
    assert last.bw_average_gbps == pytest.approx(23317.65 * 1048576 * 8 / 1e9)  # ~195.6 Gb/s on HDR 200
    assert round(r.peak_average_gbps, 1) == 195.7


def test_bw_bidirectional_gbits(real: Real) -> None:
    """ib_write_bw__cx5-roce-bidir-b-D5-gbits-pve-blog__6.txt - code-index post id 310222282
    (``ib_write_bw -b -D 5 --report_gbits``): BW peak not measured (0.00) and a WARNING line before the
    header."""
    r = parse_bw(real("ib_write_bw__cx5-roce-bidir-b-D5-gbits-pve-blog__6.txt"))
    assert r.header.test == "RDMA_Write Bidirectional BW Test" and r.unit == "Gb/sec"
    assert (
        r.header.warnings[0] == "WARNING: BW peak won't be measured in this run."
        and r.header.cpufreq_warnings == 1
    )
    assert r.header.gid_index == 4 and r.header.link_type == "Ethernet"
    assert r.header.local_gid == "00:00:00:00:00:00:00:00:00:00:255:255:192:168:06:116"
    [row] = r.rows
    assert (row.bytes, row.iterations, row.bw_peak, row.bw_average_gbps, row.msg_rate_mpps) == (
        65536, 560845, 0.0, 98.02, 0.186950)  # fmt: skip


def test_bw_rdma_cm_single_row(real: Real) -> None:
    """ib_write_bw__cx5-roce-zR-gid3-cpufreq-warn-asdfsx__5.txt - code-index file id 47438530947 (k8s RDMA
    notes),
    ``ib_write_bw -d mlx5_0 10.0.33.3 -zR``; MB/sec, ~88 Gb/s."""
    r = parse_bw(real("ib_write_bw__cx5-roce-zR-gid3-cpufreq-warn-asdfsx__5.txt"))
    assert (
        r.header.settings["Data ex. method"] == "rdma_cm" and r.header.mtu == 1024 and r.header.gid_index == 3
    )
    assert r.header.remote_gid == "00:00:00:00:00:00:00:00:00:00:255:255:10:00:33:03"
    assert r.rows[0].bw_average == 11024.71 and round(r.rows[0].bw_average_gbps, 2) == 92.48


def test_bw_failed_run_keeps_rows_and_errors(real: Real) -> None:
    """ib_write_bw__h200-gke-roce-host-a-failed-dranet__1.txt - kubernetes-sigs/dranet gke-rdma.md lines
    166-208
    @f258477c. FAILURE: ``Completion with error at client`` after the 65536-byte row; no closing dashes."""
    r = parse_bw(real("ib_write_bw__h200-gke-roce-host-a-failed-dranet__1.txt"))
    assert not r.header.completed and len(r.rows) == 16 and r.rows[-1].bytes == 65536
    assert r.header.errors == (
        "Completion with error at client", "Failed status 10: wr_id 0 syndrom 0x88", "scnt=128, ccnt=0",
        "Failed to complete run_iter_bw function successfully",
    )  # fmt: skip
    assert (
        r.rows[0].bw_peak == 0.050986 and r.rows[-1].bw_average_gbps == 381.41 and r.header.device == "mlx5_3"
    )


def test_bw_cuda_dmabuf_preamble_and_epilogue(real: Real) -> None:
    """ib_write_bw__h200-gke-roce-use_cuda-dmabuf-dranet__2.txt - kubernetes-sigs/dranet gke-rdma.md lines
    250-311
    @f258477c (``--use_cuda=0 --use_cuda_dmabuf``); CUDA init preamble and GPU-buffer epilogue around the
    report."""
    r = parse_bw(real("ib_write_bw__h200-gke-roce-use_cuda-dmabuf-dranet__2.txt"))
    assert r.header.completed and len(r.rows) == 23 and r.rows[-1].bytes == 8388608
    assert max(row.bw_average_gbps for row in r.rows) == 140.95
    assert r.header.settings["CQE Poll Batch"] == "16" and r.header.settings["Using DDP"] == "OFF"


def test_lat_read_roce(real: Real) -> None:
    """ib_read_lat__cx5-roce-macvlan-pod-cpufreq-warn-spiderpool__1.txt - spidernet-io/spiderpool:
    docs/usage/rdma-roce.md lines 197-219 @5a67e982; two CPU-frequency warnings before the row."""
    r = parse_lat(real("ib_read_lat__cx5-roce-macvlan-pod-cpufreq-warn-spiderpool__1.txt"))
    assert r.header.test == "RDMA_Read Latency Test" and r.header.gid_index == 12 and r.header.mtu == 1024
    assert r.header.settings["Outstand reads"] == "16" and r.header.cpufreq_warnings == 2
    [row] = r.rows
    assert (row.bytes, row.iterations, row.t_min, row.t_max, row.t_typical) == (2, 1000, 6.88, 16.81, 7.04)
    assert (row.t_avg, row.t_stdev, row.p99, row.p99_9) == (7.06, 0.31, 7.38, 16.81)


def test_lat_a100_sweep_tabs(real: Real) -> None:
    """ib_write_lat__a100-ib-hdr-mlx5_0-cpufreq-warn-brevdoc__1.txt - code-index capture log id 60859828466
    (``ib_write_lat -d mlx5_0 -a``); tabs inside rows, two CPU-frequency warnings per row."""
    r = parse_lat(real("ib_write_lat__a100-ib-hdr-mlx5_0-cpufreq-warn-brevdoc__1.txt"))
    assert (
        len(r.rows) == 23
        and r.header.cpufreq_warnings == 46
        and r.header.settings["Max inline data"] == "220[B]"
    )
    last = r.rows[-1]
    assert (last.bytes, last.t_min, last.t_max, last.t_typical, last.t_avg) == (
        8388608,
        345.23,
        447.02,
        345.55,
        348.34,
    )
    assert (last.t_stdev, last.p99, last.p99_9) == (15.93, 441.71, 447.02)
    assert r.rows[0].t_typical == 1.87


def test_lat_dgx_spark_rdma_cm(real: Real) -> None:
    """ib_write_lat__dgx-spark-cx7-rocep1s0f1-rdmacm-eugr__2.txt - SOURCES.md "same file (Latency test)"
    @10fa84e1;
    ``ib_write_lat ... -d rocep1s0f1 -R --force-link IB``."""
    r = parse_lat(real("ib_write_lat__dgx-spark-cx7-rocep1s0f1-rdmacm-eugr__2.txt"))
    assert r.header.device == "rocep1s0f1" and r.header.link_type == "IB" and r.header.local_gid is None
    [row] = r.rows
    assert (row.t_min, row.t_max, row.t_typical, row.t_avg, row.t_stdev, row.p99, row.p99_9) == (
        1.42, 1.93, 1.47, 1.47, 0.0, 1.57, 1.93)  # fmt: skip


def test_wrong_report_kind_and_truncation(real: Real) -> None:
    bw = real("ib_write_bw__a100-ib-hdr-cx6-mlx5_0-cpufreq-warn-brevdoc__3.txt")
    with pytest.raises(ParseError, match="BW Test"):
        parse_lat(bw)
    with pytest.raises(ParseError, match="not closed"):
        parse_bw(head(bw, 40))
    with pytest.raises(ParseError, match="result table"):
        parse_bw(head(bw, 15))
    with pytest.raises(ParseError, match="Device"):
        parse_lat(head(real("ib_write_lat__dgx-spark-cx7-rocep1s0f1-rdmacm-eugr__2.txt"), 2))


@pytest.mark.parametrize(
    "text", ["", "Couldn't connect to 10.0.0.1:18515\n", "RDMA_Write BW Test\n#bytes foo\n"]
)
def test_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_bw(text)
    with pytest.raises(ParseError):
        parse_lat(text)
