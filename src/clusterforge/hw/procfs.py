"""Host readers: ``/proc/meminfo`` (whole file or ``grep Huge`` fragments), plus re-exports of the
``cpupower`` and ``lscpu`` parsers so callers can find every host reader here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import require_text, split_lines
from .cpupower import (
    CpuFreqPolicy,
    CpuIdleInfo,
    IdleState,
    parse_cpupower_frequency_info,
    parse_cpupower_idle_info,
)
from .errors import ParseError
from .lscpu import Lscpu, parse_lscpu

TOOL = "/proc/meminfo"

_LINE_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_()]*):\s+(?P<value>\d+)(?P<kb> kB)?$")
_HUGE_KEYS = ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp", "Hugepagesize")
_COUNT_KEYS = frozenset({"HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp"})

parse_cpuidle = parse_cpupower_idle_info

__all__ = [
    "CpuFreqPolicy",
    "CpuIdleInfo",
    "IdleState",
    "Lscpu",
    "Meminfo",
    "parse_cpuidle",
    "parse_cpupower_frequency_info",
    "parse_cpupower_idle_info",
    "parse_lscpu",
    "parse_meminfo",
]


@dataclass(frozen=True)
class Meminfo:
    values: Mapping[str, int]  # every line; kB values in kB, HugePages_* as page counts

    def _get(self, key: str) -> int | None:
        return self.values.get(key)

    @property
    def mem_total_kb(self) -> int | None:
        return self._get("MemTotal")

    @property
    def mem_available_kb(self) -> int | None:
        return self._get("MemAvailable")

    @property
    def hugepages_total(self) -> int | None:
        return self._get("HugePages_Total")

    @property
    def hugepages_free(self) -> int | None:
        return self._get("HugePages_Free")

    @property
    def hugepages_rsvd(self) -> int | None:
        return self._get("HugePages_Rsvd")

    @property
    def hugepages_surp(self) -> int | None:
        return self._get("HugePages_Surp")

    @property
    def hugepagesize_kb(self) -> int | None:
        return self._get("Hugepagesize")

    @property
    def hugetlb_kb(self) -> int | None:
        return self._get("Hugetlb")

    @property
    def anon_hugepages_kb(self) -> int | None:
        return self._get("AnonHugePages")


def parse_meminfo(text: str) -> Meminfo:
    """Parse ``/proc/meminfo`` or a ``grep Huge`` subset of it.

    The input must contain ``MemTotal`` (whole file) or the complete HugePages block
    (``HugePages_Total/Free/Rsvd/Surp`` and ``Hugepagesize``); kB units must sit on kB fields only.
    """
    require_text(TOOL, text)
    values: dict[str, int] = {}
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        m = _LINE_RE.match(line)
        if not m:
            raise ParseError(TOOL, "expected '<Key>: <number> [kB]'", line_no=line_no, line=raw)
        key = m.group("key")
        if key in values:
            raise ParseError(TOOL, f"{key} repeated", line_no=line_no, line=raw)
        if (key in _COUNT_KEYS) == bool(m.group("kb")):
            raise ParseError(TOOL, f"{key} has the wrong unit", line_no=line_no, line=raw)
        values[key] = int(m.group("value"))
    has_huge = any(k in values for k in _HUGE_KEYS)
    if has_huge:
        missing = [k for k in _HUGE_KEYS if k not in values]
        if missing:
            raise ParseError(TOOL, f"HugePages block incomplete, missing {missing}")
        if values["HugePages_Free"] > values["HugePages_Total"]:
            raise ParseError(TOOL, "HugePages_Free exceeds HugePages_Total")
    elif "MemTotal" not in values:
        raise ParseError(TOOL, "neither MemTotal nor the HugePages block - output truncated or not meminfo")
    return Meminfo(values)
