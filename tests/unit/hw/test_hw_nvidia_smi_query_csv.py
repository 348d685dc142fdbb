"""nvidia_smi.parse_query_csv on every ``nvidia-smi-query-gpu__*`` real capture (sources from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nvidia_smi import parse_query_csv

from .conftest import head

Real = Callable[[str], str]
A10_FIELDS = [
    "timestamp", "pstate", "temperature.gpu", "utilization.gpu", "utilization.memory", "memory.total",
    "memory.free", "memory.used",
]  # fmt: skip


def test_a10_lms_with_units(real: Real) -> None:
    """nvidia-smi-query-gpu__a10-lms-xuesongtap__1.txt - XueSongTap/XueSongTap.github.io
    _posts/2024/2024-01-04-nvidia-smi-more.md lines 197-202 @911d76ca; ``--format=csv`` (units in header
    and values)."""
    rows = parse_query_csv(real("nvidia-smi-query-gpu__a10-lms-xuesongtap__1.txt"), A10_FIELDS)
    assert len(rows) == 5
    assert rows[0] == {
        "timestamp": "2024/01/16 14:44:16.977", "pstate": "P8", "temperature.gpu": 25, "utilization.gpu": 0,
        "utilization.memory": 0, "memory.total": 23028, "memory.free": 22494, "memory.used": 21,
    }  # fmt: skip
    assert [r["temperature.gpu"] for r in rows] == [25, 24, 23, 26, 25]
    assert rows[1]["memory.used"] == 7


def test_h100_power_draw_float(real: Real) -> None:
    """nvidia-smi-query-gpu__h100-eks-pod-util-power-aicr__4.txt - njhensley/aicr:
    docs/conformance/cncf/evidence/pod-autoscaling.md @4ff1fab5 (``--format=csv``, no nounits)."""
    rows = parse_query_csv(
        real("nvidia-smi-query-gpu__h100-eks-pod-util-power-aicr__4.txt"),
        ["utilization.gpu", "utilization.memory", "power.draw"],
    )
    assert rows == [{"utilization.gpu": 100, "utilization.memory": 0, "power.draw": 592.74}]


def test_vbios_excerpt_aliases(real: Real) -> None:
    """nvidia-smi-query-gpu__h100-vbios-stas00__1.txt - stas00/ml-engineering
    compute/accelerator/nvidia/debug.md
    lines 254-257 @1c4d240d. The command asked for gpu_name,gpu_bus_id (header prints name, pci.bus_id); the
    author elided rows with ``[...]`` -> strict parse refuses, ``partial=True`` keeps the two shown rows."""
    text = real("nvidia-smi-query-gpu__h100-vbios-stas00__1.txt")
    fields = ["gpu_name", "gpu_bus_id", "vbios_version"]
    with pytest.raises(ParseError, match="elided"):
        parse_query_csv(text, fields)
    rows = parse_query_csv(text, fields, partial=True)
    assert rows == [
        {
            "gpu_name": "NVIDIA H100 80GB HBM3",
            "gpu_bus_id": "00000000:04:00.0",
            "vbios_version": "96.00.89.00.01",
        },
        {
            "gpu_name": "NVIDIA H100 80GB HBM3",
            "gpu_bus_id": "00000000:8B:00.0",
            "vbios_version": "96.00.89.00.01",
        },
    ]


def test_noheader_nounits_and_null_values() -> None:
    text = "0, NVIDIA H100 80GB HBM3, 1650124031592, 81559, [N/A], [Not Supported], 67.74\n"
    fields = [
        "index",
        "name",
        "serial",
        "memory.total",
        "fan.speed",
        "clocks_event_reasons.active",
        "power.draw",
    ]
    assert parse_query_csv(text, fields) == [{
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "serial": "1650124031592", "memory.total": 81559,
        "fan.speed": None, "clocks_event_reasons.active": None, "power.draw": 67.74,
    }]  # fmt: skip


def test_header_mismatch_and_garbage(real: Real) -> None:
    text = real("nvidia-smi-query-gpu__h100-eks-pod-util-power-aicr__4.txt")
    with pytest.raises(ParseError, match="do not match"):
        parse_query_csv(text, ["utilization.gpu", "power.draw", "utilization.memory"])
    with pytest.raises(ParseError):
        parse_query_csv("<html>503 Service Unavailable</html>\n", ["utilization.gpu", "power.draw"])
    with pytest.raises(ParseError):
        parse_query_csv("", ["utilization.gpu"])


def test_truncated_header_only(real: Real) -> None:
    """The header line alone (first line of the a10 capture) has no GPU rows."""
    with pytest.raises(ParseError, match="no GPU rows"):
        parse_query_csv(head(real("nvidia-smi-query-gpu__a10-lms-xuesongtap__1.txt"), 1), A10_FIELDS)
    cut = real("nvidia-smi-query-gpu__a10-lms-xuesongtap__1.txt")[:200]  # last row cut mid-line
    with pytest.raises(ParseError, match="expected 8 values"):
        parse_query_csv(cut, A10_FIELDS)


H100_VM_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "driver_version",
    "vbios_version",
    "serial",
    "uuid",
    "persistence_mode",
    "ecc.mode.current",
    "mig.mode.current",
    "power.limit",
    "power.max_limit",
    "clocks.max.sm",
    "clocks.max.mem",
    "memory.total",
    "temperature.gpu",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "pcie.link.gen.current",
    "pcie.link.width.current",
)


def test_h100_vm_driver_580_header_aliases(real: Real) -> None:
    """nvidia-smi-query-gpu__h100-sxm-vm-header-units-drv580-device__1.txt - scripts/capture-node.sh on a
    lent H100 VM (driver 580), ``--format=csv``: asked ``clocks.max.mem``, the header says
    ``clocks.max.memory [MHz]``; values carry units."""
    rows = parse_query_csv(
        real("nvidia-smi-query-gpu__h100-sxm-vm-header-units-drv580-device__1.txt"), H100_VM_FIELDS
    )
    assert len(rows) == 1
    r = rows[0]
    assert (r["name"], r["driver_version"], r["serial"]) == (
        "NVIDIA H100 80GB HBM3",
        "580.159.04",
        "1752624007693",
    )
    assert (r["power.limit"], r["clocks.max.sm"], r["clocks.max.mem"], r["memory.total"]) == (
        700.0,
        1980,
        2619,
        81559,
    )
    assert (r["ecc.mode.current"], r["pcie.link.gen.current"], r["pcie.link.width.current"]) == (
        "Enabled",
        5,
        16,
    )


def test_h100_vm_burnin_ecc_fields_noheader(real: Real) -> None:
    """nvidia-smi-query-gpu__h100-sxm-vm-ecc-noheader-drv580-device__2.txt - the burn-in ECC read
    (burnin/suite.py ECC_FIELDS, ``csv,noheader,nounits``) on the same lent H100 VM."""
    from clusterforge.burnin.suite import ECC_FIELDS

    rows = parse_query_csv(
        real("nvidia-smi-query-gpu__h100-sxm-vm-ecc-noheader-drv580-device__2.txt"), ECC_FIELDS
    )
    assert rows == [
        {"index": 0, "serial": "1752624007693", "ecc.errors.corrected.aggregate.total": 0,
         "ecc.errors.uncorrected.aggregate.total": 0, "ecc.errors.corrected.volatile.total": 0,
         "ecc.errors.uncorrected.volatile.total": 0}
    ]  # fmt: skip
