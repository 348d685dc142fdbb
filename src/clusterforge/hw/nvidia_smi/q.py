"""``nvidia-smi -q`` (``-a``, ``--query``, optionally ``-i N`` / ``-d SECTIONS``) output."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._common import is_elision, require_text, split_lines
from ..errors import ParseError
from .q_model import EccCounts, GpuProcess, GpuQ, NvidiaSmiQ, RemappedRows, RetiredPages

__all__ = ["EccCounts", "GpuProcess", "GpuQ", "NvidiaSmiQ", "RemappedRows", "RetiredPages", "parse_q"]

TOOL = "nvidia-smi -q"
BANNER = "==============NVSMI LOG=============="
NA = frozenset({"N/A", "Not Found", "Not Supported", "[N/A]", "[Not Supported]"})

_KV_RE = re.compile(r"^(?P<key>\S(?:.*?\S)?)\s+:(?: (?P<value>.*))?$")
_GPU_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")
_INT_UNIT_RE = re.compile(r"^(-?\d+)(?:x| (?:bank\(s\)|MiB|C|us|KB/s))?$")
_UNIT_RE = re.compile(r"^(?P<num>-?\d+(?:\.\d+)?) ?(?P<unit>[A-Za-z/%()]+)$")


@dataclass
class _Node:
    key: str
    value: str | None
    line_no: int
    children: list[_Node] = field(default_factory=list)

    def find(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for part in path:
            assert node is not None
            node = next((c for c in node.children if c.key == part), None)
            if node is None:
                return None
        return node


class _Conv:
    """Typed accessors for one GPU section; errors name the field path and line."""

    def __init__(self, gpu: _Node) -> None:
        self.gpu = gpu

    def raw(self, *path: str) -> str | None:
        node = self.gpu.find(*path)
        if node is None or node.value is None:
            return None
        return None if node.value in NA else node.value

    def _fail(self, path: tuple[str, ...], what: str, value: str) -> ParseError:
        node = self.gpu.find(*path)
        return ParseError(
            TOOL, f"{'/'.join(path)} is not {what}: {value!r}", line_no=node.line_no if node else None
        )

    def int(self, *path: str) -> int | None:
        value = self.raw(*path)
        if value is None:
            return None
        m = _INT_UNIT_RE.match(value)
        if not m:
            raise self._fail(path, "an integer", value)
        return int(m.group(1))

    def float(self, *path: str) -> float | None:
        value = self.raw(*path)
        if value is None:
            return None
        m = _UNIT_RE.match(value)
        if not m:
            raise self._fail(path, "a number with unit", value)
        return float(m.group("num"))

    def yesno(self, *path: str) -> bool | None:
        value = self.raw(*path)
        if value is None:
            return None
        if value not in ("Yes", "No"):
            raise self._fail(path, "Yes/No", value)
        return value == "Yes"


def _tree(text: str, partial: bool) -> _Node:
    lines = split_lines(text)
    start = next((i for i, line in enumerate(lines) if line.strip() == BANNER), None)
    if start is None and not partial:
        raise ParseError(TOOL, f"missing {BANNER!r} banner - not nvidia-smi -q output")
    root = _Node("", None, 0)
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for idx in range(0 if start is None else start + 1, len(lines)):
        line, line_no = lines[idx].rstrip(), idx + 1
        if not line.strip() or (partial and is_elision(line)):
            continue
        body = line.lstrip(" ")
        if body.startswith("\t"):
            raise ParseError(TOOL, "tab indentation is not nvidia-smi -q layout", line_no=line_no, line=line)
        indent = len(line) - len(body)
        m = _KV_RE.match(body)
        node = (
            _Node(m.group("key"), (m.group("value") or "").strip(), line_no)
            if m
            else _Node(body, None, line_no)
        )
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if parent is root:
            if indent != 0:
                raise ParseError(TOOL, "indented line outside any GPU section", line_no=line_no, line=line)
            if node.value is None and not _GPU_RE.match(node.key):
                raise ParseError(TOOL, "unrecognised top-level line", line_no=line_no, line=line)
        parent.children.append(node)
        stack.append((indent, node))
    return root


def _flatten(node: _Node, prefix: str, out: dict[str, str | None]) -> None:
    for child in node.children:
        key = f"{prefix}{child.key}"
        if child.value is not None:
            name, n = key, 2
            while name in out:
                name, n = f"{key}#{n}", n + 1
            out[name] = None if child.value in NA else child.value
        _flatten(child, key + "/", out)


def _ecc(conv: _Conv, which: str) -> EccCounts | None:
    node = conv.gpu.find("ECC Errors", which)
    if node is None:
        return None
    counters: dict[str, int | None] = {}

    def walk(n: _Node, prefix: tuple[str, ...]) -> None:
        for child in n.children:
            path = (*prefix, child.key)
            if child.key == "SRAM Threshold Exceeded":
                continue
            if child.value is not None:
                counters["/".join(path[2:])] = conv.int(*path)
            walk(child, path)

    walk(node, ("ECC Errors", which))
    parity = counters.get("SRAM Uncorrectable Parity")
    secded = counters.get("SRAM Uncorrectable SEC-DED")
    sram_unc = counters.get("SRAM Uncorrectable")
    if sram_unc is None and (parity is not None or secded is not None):
        sram_unc = (parity or 0) + (secded or 0)
    return EccCounts(
        sram_correctable=counters.get("SRAM Correctable"),
        sram_uncorrectable=sram_unc,
        sram_uncorrectable_parity=parity,
        sram_uncorrectable_secded=secded,
        dram_correctable=counters.get("DRAM Correctable"),
        dram_uncorrectable=counters.get("DRAM Uncorrectable"),
        single_bit_total=counters.get("Single Bit/Total"),
        double_bit_total=counters.get("Double Bit/Total"),
        counters=counters,
    )


def _retired(conv: _Conv) -> RetiredPages | None:
    node = conv.gpu.find("Retired Pages")
    if node is None or not node.children:
        return None
    pending_key = next(
        (k for k in ("Pending Page Blacklist", "Pending Page Retirement", "Pending") if node.find(k)), None
    )
    return RetiredPages(
        single_bit_ecc=conv.int("Retired Pages", "Single Bit ECC"),
        double_bit_ecc=conv.int("Retired Pages", "Double Bit ECC"),
        pending=conv.yesno("Retired Pages", pending_key) if pending_key else None,
    )


def _remapped(conv: _Conv) -> RemappedRows | None:
    node = conv.gpu.find("Remapped Rows")
    if node is None or not node.children:
        return None
    hist_node = node.find("Bank Remap Availability Histogram")
    histogram: dict[str, int] = {}
    for child in hist_node.children if hist_node else []:
        banks = conv.int("Remapped Rows", "Bank Remap Availability Histogram", child.key)
        if banks is not None:
            histogram[child.key] = banks
    return RemappedRows(
        correctable=conv.int("Remapped Rows", "Correctable Error"),
        uncorrectable=conv.int("Remapped Rows", "Uncorrectable Error"),
        pending=conv.yesno("Remapped Rows", "Pending"),
        failure_occurred=conv.yesno("Remapped Rows", "Remapping Failure Occurred"),
        histogram=histogram,
    )


def _clock_reasons(conv: _Conv) -> dict[str, bool | None]:
    node = conv.gpu.find("Clocks Event Reasons") or conv.gpu.find("Clocks Throttle Reasons")
    out: dict[str, bool | None] = {}

    def walk(n: _Node) -> None:
        for child in n.children:
            if child.value is not None:
                if child.value in NA:
                    out[child.key] = None
                elif child.value in ("Active", "Not Active"):
                    out[child.key] = child.value == "Active"
                else:
                    raise ParseError(
                        TOOL,
                        f"clock event reason {child.key!r} has value {child.value!r}",
                        line_no=child.line_no,
                    )
            walk(child)

    if node is not None:
        walk(node)
    return out


def _processes(conv: _Conv) -> tuple[GpuProcess, ...] | None:
    node = conv.gpu.find("Processes")
    if node is None:
        return None
    procs = []
    for child in node.children:
        if child.key != "Process ID":
            continue
        try:
            pid = int(child.value or "")
        except ValueError:
            raise ParseError(
                TOOL, f"Process ID is not an integer: {child.value!r}", line_no=child.line_no
            ) from None
        mem = child.find("Used GPU Memory")
        mem_mib = None
        if mem is not None and mem.value not in NA and mem.value:
            mem_mib = int(mem.value.split()[0])
        ptype, pname = child.find("Type"), child.find("Name")
        procs.append(GpuProcess(pid, ptype.value if ptype else None, pname.value if pname else None, mem_mib))
    return tuple(procs)


def _power_section(gpu: _Node) -> str:
    return "GPU Power Readings" if gpu.find("GPU Power Readings") else "Power Readings"


def _gpu(node: _Node, partial: bool) -> GpuQ:
    m = _GPU_RE.match(node.key)
    assert m is not None
    if not node.children:
        raise ParseError(TOOL, f"GPU section {node.key!r} is empty", line_no=node.line_no)
    if not partial and node.find("Product Name") and not node.find("Processes"):
        raise ParseError(
            TOOL, f"GPU section {node.key!r} ends before 'Processes' - output truncated", line_no=node.line_no
        )
    c = _Conv(node)
    pw = _power_section(node)
    fields: dict[str, str | None] = {}
    _flatten(node, "", fields)
    return GpuQ(
        bus_id=m.group("bus"),
        product_name=c.raw("Product Name"),
        architecture=c.raw("Product Architecture"),
        serial=c.raw("Serial Number"),
        uuid=c.raw("GPU UUID"),
        vbios_version=c.raw("VBIOS Version"),
        persistence_mode=c.raw("Persistence Mode"),
        mig_mode_current=c.raw("MIG Mode", "Current"),
        mig_mode_pending=c.raw("MIG Mode", "Pending"),
        virtualization_mode=c.raw("GPU Virtualization Mode", "Virtualization Mode"),
        ecc_mode_current=c.raw("ECC Mode", "Current"),
        ecc_mode_pending=c.raw("ECC Mode", "Pending"),
        ecc_volatile=_ecc(c, "Volatile"),
        ecc_aggregate=_ecc(c, "Aggregate"),
        sram_threshold_exceeded=c.yesno("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"),
        channel_repair_pending=c.yesno("ECC Errors", "Channel Repair Pending"),
        tpc_repair_pending=c.yesno("ECC Errors", "TPC Repair Pending"),
        retired_pages=_retired(c),
        remapped_rows=_remapped(c),
        clock_event_reasons=_clock_reasons(c),
        pcie_gen_current=c.int("PCI", "GPU Link Info", "PCIe Generation", "Current"),
        pcie_gen_max=c.int("PCI", "GPU Link Info", "PCIe Generation", "Max"),
        pcie_gen_host_max=c.int("PCI", "GPU Link Info", "PCIe Generation", "Host Max"),
        link_width_current=c.int("PCI", "GPU Link Info", "Link Width", "Current"),
        link_width_max=c.int("PCI", "GPU Link Info", "Link Width", "Max"),
        pcie_replays=c.int("PCI", "Replays Since Reset"),
        memory_total_mib=c.int("FB Memory Usage", "Total"),
        performance_state=c.raw("Performance State"),
        temperature_gpu_c=c.int("Temperature", "GPU Current Temp"),
        power_draw_w=c.float(pw, "Power Draw")
        if node.find(pw, "Power Draw")
        else c.float(pw, "Average Power Draw"),
        power_draw_instant_w=c.float(pw, "Instantaneous Power Draw"),
        power_limit_w=next(
            (
                c.float(pw, k)
                for k in ("Current Power Limit", "Enforced Power Limit", "Power Limit")
                if node.find(pw, k)
            ),
            None,
        ),
        default_power_limit_w=c.float(pw, "Default Power Limit"),
        max_power_limit_w=c.float(pw, "Max Power Limit"),
        fabric_state=c.raw("Fabric", "State"),
        fabric_status=c.raw("Fabric", "Status"),
        processes=_processes(c),
        fields=fields,
    )


def parse_q(text: str, *, partial: bool = False) -> NvidiaSmiQ:
    """Parse ``nvidia-smi -q``. Lines before the ``NVSMI LOG`` banner (e.g. a ``# cmd:`` note) are ignored.

    ``partial=True`` accepts an author's excerpt: no banner, ``[...]`` elision lines, sections cut short.
    """
    require_text(TOOL, text)
    root = _tree(text, partial)
    top = {c.key: c for c in root.children if c.value is not None}
    for key in ("Timestamp", "Driver Version", "Attached GPUs"):
        if key not in top:
            raise ParseError(TOOL, f"missing top-level {key!r}")
    if not partial and "CUDA Version" not in top:
        raise ParseError(TOOL, "missing top-level 'CUDA Version'")
    try:
        attached = int(top["Attached GPUs"].value or "")
    except ValueError:
        raise ParseError(
            TOOL, "Attached GPUs is not an integer", line_no=top["Attached GPUs"].line_no
        ) from None
    gpus = tuple(_gpu(c, partial) for c in root.children if c.value is None)
    if not gpus:
        raise ParseError(TOOL, "no GPU sections - output truncated or no GPU attached")
    if len(gpus) > attached:
        raise ParseError(TOOL, f"{len(gpus)} GPU sections but Attached GPUs says {attached}")
    cuda = top.get("CUDA Version")
    return NvidiaSmiQ(
        timestamp=top["Timestamp"].value or "",
        driver_version=top["Driver Version"].value or "",
        cuda_version=cuda.value if cuda else None,
        attached_gpus=attached,
        gpus=gpus,
    )
