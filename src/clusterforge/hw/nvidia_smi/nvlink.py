"""``nvidia-smi nvlink -s`` (``--status``) and ``nvidia-smi nvlink -e`` (error counters) output."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .._common import content_lines, require_text
from ..errors import ParseError

TOOL_S = "nvidia-smi nvlink -s"
TOOL_E = "nvidia-smi nvlink -e"

#: "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)"; newer drivers may print "GPU 0: <name>" with no UUID
_GPU_RE = re.compile(r"^GPU (?P<idx>\d+): (?P<name>.+?)(?: \(UUID: (?P<uuid>GPU-[0-9A-Za-z-]+)\))?$")
_LINK_RE = re.compile(r"^Link (?P<link>\d+): (?:(?P<speed>\d+(?:\.\d+)?) GB/s|(?P<inactive><inactive>))$")
_ERR_RE = re.compile(r"^Link (?P<link>\d+): (?P<counter>[A-Za-z][A-Za-z0-9 ]*?): (?P<value>\d+|N/A)$")
ALL_INACTIVE = "NVML: Unable to retrieve NVLink information as all links are inactive"


@dataclass(frozen=True)
class NvLinkLink:
    link: int
    speed_gbps: float | None  # GB/s per link as printed; None when inactive
    inactive: bool


@dataclass(frozen=True)
class NvLinkGpu:
    index: int
    name: str
    uuid: str | None  # None where the driver's header has no "(UUID: ...)"
    links: tuple[NvLinkLink, ...]
    all_inactive: bool  # nvidia-smi printed the "all links are inactive" NVML message

    @property
    def active_links(self) -> int:
        return sum(1 for link in self.links if not link.inactive)

    @property
    def total_gbps(self) -> float:
        return sum(link.speed_gbps or 0.0 for link in self.links)


@dataclass(frozen=True)
class NvLinkErrorsGpu:
    index: int
    name: str
    uuid: str | None
    links: Mapping[int, Mapping[str, int | None]]  # link -> {"Replay Errors": 0, "Recovery Errors": 0, ...}

    def total(self, counter: str) -> int:
        return sum(c.get(counter) or 0 for c in self.links.values())


def _gpu_header(tool: str, line: str, line_no: int) -> re.Match[str]:
    m = _GPU_RE.match(line.strip())
    if not m:
        raise ParseError(tool, "expected 'GPU n: <name>[ (UUID: GPU-...)]'", line_no=line_no, line=line)
    if "(UUID:" in m.group("name"):
        raise ParseError(tool, "undecodable '(UUID: ...)' in the GPU header", line_no=line_no, line=line)
    return m


def _check_links(tool: str, gpu: str, numbers: list[int], partial: bool) -> None:
    if not numbers:
        return
    if numbers != sorted(set(numbers)):
        raise ParseError(tool, f"{gpu}: link numbers out of order or repeated: {numbers}")
    if not partial and numbers != list(range(len(numbers))):
        raise ParseError(tool, f"{gpu}: links are not numbered 0..{len(numbers) - 1}: {numbers}")


def _check_same_count(tool: str, counts: dict[str, int], partial: bool) -> None:
    if partial or len(set(counts.values())) <= 1:
        return
    raise ParseError(tool, f"GPUs report different link counts {counts} - output truncated?")


def parse_nvlink_status(text: str, *, partial: bool = False) -> list[NvLinkGpu]:
    """Per GPU, the list of links with their speed (GB/s) or ``<inactive>``.

    ``partial=True`` accepts an author's excerpt (``[...]`` / ``...`` elision lines, skipped link numbers).
    Empty output is the driver's answer "no NVLink on any GPU" (an empty list): a PCIe GPU, or an SXM GPU
    whose links the OS cannot see (real capture: H100 SXM in a VM, driver 580, `nvlink -s` exits 0 and
    prints nothing). Whether that is wrong is the caller's to judge; a failed run exits non-zero.
    """
    if isinstance(text, str) and not text.strip():
        return []
    require_text(TOOL_S, text)
    gpus: list[tuple[re.Match[str], list[NvLinkLink], bool, int]] = []
    for line_no, raw, line in content_lines(TOOL_S, text, partial, "elided output - links are missing"):
        if line.startswith("GPU "):
            gpus.append((_gpu_header(TOOL_S, raw, line_no), [], False, line_no))
            continue
        if not gpus:
            raise ParseError(TOOL_S, "output does not start with a 'GPU n:' line", line_no=line_no, line=raw)
        m, links, inactive, gpu_line = gpus[-1]
        if line == ALL_INACTIVE:
            if links or inactive:
                raise ParseError(TOOL_S, "'all links are inactive' after link lines", line_no=line_no)
            gpus[-1] = (m, links, True, gpu_line)
            continue
        lm = _LINK_RE.match(line)
        if not lm or inactive:
            raise ParseError(TOOL_S, "unrecognised line", line_no=line_no, line=raw)
        speed = lm.group("speed")
        links.append(
            NvLinkLink(int(lm.group("link")), float(speed) if speed else None, bool(lm.group("inactive")))
        )
    if not gpus:
        raise ParseError(TOOL_S, "no 'GPU n:' lines")
    result = []
    for m, links, inactive, gpu_line in gpus:
        if not links and not inactive:
            raise ParseError(
                TOOL_S, f"GPU {m.group('idx')} has no link lines - output truncated", line_no=gpu_line
            )
        _check_links(TOOL_S, f"GPU {m.group('idx')}", [lk.link for lk in links], partial)
        result.append(
            NvLinkGpu(int(m.group("idx")), m.group("name"), m.group("uuid"), tuple(links), inactive)
        )
    _check_same_count(TOOL_S, {f"GPU {g.index}": len(g.links) for g in result if not g.all_inactive}, partial)
    return result


def parse_nvlink_errors(text: str, *, partial: bool = False) -> list[NvLinkErrorsGpu]:
    """Per GPU and link, the ``nvlink -e`` counters (Replay/Recovery/CRC Errors ...)."""
    require_text(TOOL_E, text)
    gpus: list[tuple[re.Match[str], dict[int, dict[str, int | None]], int]] = []
    for line_no, raw, line in content_lines(TOOL_E, text, partial, "elided output - links are missing"):
        if line.startswith("GPU "):
            gpus.append((_gpu_header(TOOL_E, raw, line_no), {}, line_no))
            continue
        em = _ERR_RE.match(line)
        if not gpus or not em:
            raise ParseError(TOOL_E, "unrecognised line", line_no=line_no, line=raw)
        counters = gpus[-1][1].setdefault(int(em.group("link")), {})
        if em.group("counter") in counters:
            raise ParseError(TOOL_E, f"counter {em.group('counter')!r} repeated for a link", line_no=line_no)
        value = em.group("value")
        counters[em.group("counter")] = None if value == "N/A" else int(value)
    if not gpus:
        raise ParseError(TOOL_E, "no 'GPU n:' lines")
    result = []
    for m, links, gpu_line in gpus:
        name = f"GPU {m.group('idx')}"
        if not links:
            raise ParseError(TOOL_E, f"{name} has no link lines - output truncated", line_no=gpu_line)
        _check_links(TOOL_E, name, list(links), partial)
        sets = {frozenset(c) for c in links.values()}
        if len(sets) != 1:
            raise ParseError(TOOL_E, f"{name}: links report different counter sets - output truncated?")
        result.append(NvLinkErrorsGpu(int(m.group("idx")), m.group("name"), m.group("uuid"), links))
    _check_same_count(TOOL_E, {f"GPU {g.index}": len(g.links) for g in result}, partial)
    return result
