"""Burn-in data: the tests, findings and node verdicts. `Measurement` (one row per unit per iteration) is a
stored row, defined with the other records rows in `clusterforge.records.model`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from clusterforge.records.model import Measurement

__all__ = ["COUNTER_PREFIX", "PERF_TESTS", "TESTS", "Finding", "Measurement", "NodeVerdict", "unit_of"]

# test name -> (unit, floor key or None, what a unit is): the SKU threshold's key, a storage target's floor's
# for fio
TESTS: dict[str, tuple[str, str | None, str]] = {
    "dcgm.diag": ("pass", None, "node"),
    "nvbandwidth.h2d": ("GB/s", "h2d_gbs", "GPU"),
    "nvbandwidth.d2h": ("GB/s", "d2h_gbs", "GPU"),
    "nvbandwidth.d2d": ("GB/s", "d2d_gbs", "GPU (median of its row)"),
    "ib_write_bw.loopback": ("Gb/s", "ib_write_bw_gbps", "rail (GPUDirect loopback)"),
    "all_reduce.node": ("GB/s", "allreduce_busbw_gbs", "node (all GPUs)"),
    "ib_write_bw.pair": ("Gb/s", "ib_write_bw_gbps", "node pair on a rail"),
    "all_reduce.group": ("GB/s", None, "group of nodes"),
    "fio.seq_read": ("GB/s", "seq_read_gbs", "storage target (scratch or a shared mount)"),
    "fio.seq_write": ("GB/s", "seq_write_gbs", "storage target (scratch or a shared mount)"),
    "ecc.corrected": ("count", None, "GPU"),
    "ecc.uncorrected": ("count", None, "GPU"),
}
PERF_TESTS = tuple(t for t, (u, _, _) in TESTS.items() if u in ("GB/s", "Gb/s"))
COUNTER_PREFIX = "ibcounter."
#: finding kinds of tests that measured nothing (verdict error, no component suspected)
UNMEASURED_KINDS = ("missing", "not-run")  # ibcounter.<sysfs counter name>, per rail


def unit_of(test: str) -> str:
    if test.startswith(COUNTER_PREFIX):
        return "count"
    return TESTS.get(test, ("", None, ""))[0]


@dataclass(frozen=True)
class Finding:
    """Something wrong that burn-in found, with the component it points to.

    `node` is empty for fabric findings (a leaf, a path between leaves, a group no node explains).
    """

    node: str
    component: str  # human: "rail 3 NIC mlx5_3", "GPU 0 (serial 1650...)", "leaf ib0-leaf-su0-r2"
    # low | variable | threshold | failed | dcgm | ecc | link-errors | link | ambiguous | leaf | path | group
    # | missing (a tool or daemon was not there) | not-run (its tool crashed, hung or printed nothing usable):
    # no component, verdict error
    kind: str
    test: str
    summary: str  # one line, used in the drain reason
    value: float | None = None
    fleet: float | None = None
    unit: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class NodeVerdict:
    node: str
    verdict: str  # pass | fail | error
    findings: list[Finding] = field(default_factory=list)
    iterations: int = 0

    @property
    def components(self) -> list[str]:
        """Suspected components (a missing tool suspects none)."""
        return list(dict.fromkeys(f.component for f in self.findings if f.component))

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "verdict": self.verdict,
            "iterations": self.iterations,
            "components": self.components,
            "findings": [f.as_dict() for f in self.findings],
        }
