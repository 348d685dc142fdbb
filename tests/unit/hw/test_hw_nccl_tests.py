"""nccl_tests.parse on every ``nccl-all_reduce_perf__*`` / ``nccl-all_gather_perf__*`` real capture."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nccl_tests import parse

from .conftest import head

Real = Callable[[str], str]


def test_h100x8_single_node_older_device_format(real: Real) -> None:
    """nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt - elideng repo
    assets/lab-04/all_reduce_8gpu.txt
    @d9f1e65e; older nccl-tests build: devices printed as ``[0x04]``, NCCL version line present."""
    r = parse(real("nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt"))
    assert r.nccl_version == "2.22.3+cuda12.6" and r.params["nGpus"] == "8" and r.params["iters"] == "20"
    assert len(r.ranks) == 8 and r.ranks[2].bus_id == "0x0a" and r.ranks[0].name == "NVIDIA H100 80GB HBM3"
    assert r.ranks[0].host == "gke-hypercomputer-a3-a3-h100-dws-pool-16664d9c-hv7m" and r.ranks[0].pid == 181
    assert len(r.rows) == 31 and r.rows[0].size_bytes == 8 and r.rows[-1].size_bytes == 8589934592
    big = r.row(8589934592)
    assert (big.count, big.type, big.redop, big.root) == (2147483648, "float", "sum", -1)
    assert (big.out_of_place.time_us, big.out_of_place.algbw_gbps, big.out_of_place.busbw_gbps) == (
        31322.0,
        274.24,
        479.93,
    )
    assert big.in_place.algbw_gbps == 274.25 and big.in_place.wrong == 0
    assert r.avg_bus_bandwidth == 145.47 and r.out_of_bounds == 0 and r.wrong_total == 0 and not r.wrong_na
    assert r.max_busbw == 479.93 and r.errors == ()


def test_b200x16_all_gather(real: Real) -> None:
    """nccl-all_gather_perf__b200x16-2node-gke-a4-roce-dranet__1.txt - kubernetes-sigs/dranet
    site/content/docs/user/gke-rdma.md lines 351-400 @f258477c; newer device format ``[0000:8f:00]``."""
    r = parse(real("nccl-all_gather_perf__b200x16-2node-gke-a4-roce-dranet__1.txt"))
    assert (
        r.nccl_version == "2.26.6+cuda12.8"
        and r.params["warmup iters"] == "50"
        and r.params["iters"] == "100"
    )
    assert len(r.ranks) == 16 and r.ranks[15].host == "nccl-gib-test-1" and r.ranks[15].bus_id == "0000:cc:00"
    assert {row.redop for row in r.rows} == {"none"} and r.rows[0].size_bytes == 1024
    assert (
        r.row(4294967296).out_of_place.time_us == 15394.0 and r.row(8589934592).in_place.busbw_gbps == 259.25
    )
    assert r.avg_bus_bandwidth == 59.3638 and len(r.rows) == 24


def test_h100x16_tcpxo_no_version_line(real: Real) -> None:
    """nccl-all_reduce_perf__h100x16-2node-gcp-a3mega-tcpxo-ztan__3.txt - lessizzmore/create-a3mega-ztan-fork:
    ztan-NCCL-test-result lines 9-65 @5f9e1ddc; no NCCL version line, trailing spaces on header lines."""
    r = parse(real("nccl-all_reduce_perf__h100x16-2node-gcp-a3mega-tcpxo-ztan__3.txt"))
    assert r.nccl_version is None and len(r.ranks) == 16 and r.ranks[8].host == "ztan-mig-gq73"
    assert r.avg_bus_bandwidth == 70.742 and r.row(8589934592).out_of_place.busbw_gbps == 338.82


def test_h100x64_8node_outlier_row(real: Real) -> None:
    """nccl-all_reduce_perf__h100x64-8node-nccltests309__4.txt - SOURCES.md "same issue thread, comment by
    gj-aion
    2025-06-18" (nccl-tests issue 309); 64 ranks, one outlier row (8 MiB out-of-place 1272.4 us)."""
    r = parse(real("nccl-all_reduce_perf__h100x64-8node-nccltests309__4.txt"))
    assert len(r.ranks) == 64 and r.ranks[4].bus_id == "0001:1b:00" and r.ranks[63].host == "b3a57cc9"
    outlier = r.row(8388608)
    assert outlier.out_of_place.time_us == 1272.4 and outlier.out_of_place.busbw_gbps == 12.98
    assert outlier.in_place.busbw_gbps == 51.38
    assert r.avg_bus_bandwidth == 183.055 and r.params["minBytes"] == "1048576" and len(r.rows) == 14


def test_h200x2_mpirun_preamble(real: Real) -> None:
    """nccl-all_reduce_perf__h200x2-2node-1nic-roce-mpioperator-dranet__5.txt - kubernetes-sigs/dranet
    site/content/docs/user/mpi-operator.md lines 179-243 @f258477c; Open MPI warning blocks precede the
    table."""
    r = parse(real("nccl-all_reduce_perf__h200x2-2node-1nic-roce-mpioperator-dranet__5.txt"))
    assert [(k.rank, k.host, k.bus_id) for k in r.ranks] == [
        (0, "nccl-test-dranet-1gpu-1nic-worker-0", "0000:cc:00"),
        (1, "nccl-test-dranet-1gpu-1nic-worker-1", "0000:97:00"),
    ]
    assert r.avg_bus_bandwidth == 15.5188 and r.row(8589934592).out_of_place.time_us == 269368.0
    assert r.max_busbw == 31.89


def test_wrong_na_and_failures() -> None:
    """#wrong printed as N/A when validation is disabled (-c 0); a failure line is kept, not ignored."""
    text = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 "
        "validation: 0 graph: 0\n#\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   al"
        "gbw   busbw #wrong\n"
        "           8             2     float     sum      -1    10.00    0.00    0.00    N/A    10.00    0"
        ".00    0.00    N/A\n"
        "# Avg bus bandwidth    : 0.0001 \n"
    )
    r = parse(text)
    assert r.wrong_na and r.wrong_total is None and r.rows[0].out_of_place.wrong is None
    failed = parse(
        text.replace("# Avg bus bandwidth    : 0.0001 \n", " host: Test NCCL failure common.cu:1030\n")
    )
    assert failed.avg_bus_bandwidth is None and failed.errors == ("host: Test NCCL failure common.cu:1030",)


def test_truncated_raises(real: Real) -> None:
    text = real("nccl-all_reduce_perf__h100x8-gke-a3-1node-elideng__1.txt")
    with pytest.raises(ParseError, match="Avg bus bandwidth"):
        parse(head(text, 30))
    with pytest.raises(ParseError, match="table header"):
        parse(head(text, 12))
    with pytest.raises(ParseError, match="values"):
        parse(
            text.replace(
                "  8589934592    2147483648     float     sum      -1    31322  274.24  479.93      0",
                "  8589934592    2147483648     float     sum      -1    31322",
            )
        )


@pytest.mark.parametrize("text", ["", "segmentation fault\n", "# nThread 1\n#  size count\n    1 2 3\n"])
def test_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


def test_alltoall_2node_open_mpi_help_lines_inside_table(real: Real) -> None:
    """nccl-alltoall_perf__rtx6000d-x16-2node-hpcx-ompi-help-aggregate-in-table-6kdreport__excerpt1.txt -
    code-index id 52498782341 (a 2-node HPC-X mpirun report). Open MPI's help-aggregation lines sit between
    the table header and the first row; they are mpirun's, not a result row."""
    r = parse(
        real(
            "nccl-alltoall_perf__rtx6000d-x16-2node-hpcx-ompi-help-aggregate-in-table-6kdreport__excerpt1.txt"
        )
    )
    assert len(r.ranks) == 16 and {k.host for k in r.ranks} == {"R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"}
    assert r.nccl_version == "2.30.3+cuda13.0" and len(r.rows) == 24 and r.errors == ()
    assert r.rows[0].size_bytes == 1024 and r.row(8589934592).out_of_place.busbw_gbps == 41.03
    assert r.avg_bus_bandwidth == 21.1462 and r.wrong_na and r.wrong_total == 0


def test_open_mpi_help_lines_between_devices_and_table(real: Real) -> None:
    """The same lines where the brief saw them: after the device list, before the header (moved there
    from the capture above - a CONSTRUCTED reordering of real lines)."""
    text = real(
        "nccl-alltoall_perf__rtx6000d-x16-2node-hpcx-ompi-help-aggregate-in-table-6kdreport__excerpt1.txt"
    )
    lines = text.splitlines(keepends=True)
    help_lines = [ln for ln in lines if ln.startswith("[R6KD")]
    rest = [ln for ln in lines if not ln.startswith("[R6KD")]
    at = next(i for i, ln in enumerate(rest) if ln.startswith("NCCL version"))
    r = parse("".join(rest[:at] + help_lines + rest[at:]))
    assert len(r.rows) == 24 and len(r.ranks) == 16
    with pytest.raises(ParseError):  # anything else between the rows still breaks the parse
        parse(text.replace(help_lines[0], "[R6KD-CX8aaS-GPU-11:00814] something else\n"))
