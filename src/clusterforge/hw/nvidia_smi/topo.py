"""``nvidia-smi topo -m`` / ``topo -mp`` output: the GPU/NIC link matrix, affinities and legends."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .._common import is_cpulist, parse_cpulist, require_text, split_lines, strip_ansi
from ..errors import ParseError

TOOL = "nvidia-smi topo -m"

_ENTITY_RE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|[a-z][a-z0-9_]*\d)$")
_LEGEND_RE = re.compile(r"^(?P<key>X|[A-Z]+#?)\s+= (?P<desc>.+)$")
_NIC_LEGEND_RE = re.compile(r"^(?P<nic>NIC\d+): (?P<dev>\S+)$")
_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
#: link types nvidia-smi documents in its Legend (used when a cut-short output lost the Legend)
_DOCUMENTED_LEGEND = {k: "" for k in ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#")}


@dataclass(frozen=True)
class GpuAffinity:
    cpu_affinity: str | None  # as printed, e.g. "0-55,112-167"; None when the cell is empty/N/A
    cpus: tuple[int, ...]
    numa_affinity: str | None  # e.g. "0" or "0-3"
    numa_nodes: tuple[int, ...]
    gpu_numa_id: int | None  # newer drivers' "GPU NUMA ID" column (N/A -> None)


@dataclass(frozen=True)
class Topology:
    gpus: tuple[str, ...]  # "GPU0", ...
    nics: tuple[str, ...]  # "NIC0", ... (or raw device names on old drivers)
    links: Mapping[str, Mapping[str, str | None]]  # row -> column -> "X"/"NV18"/"PIX"/"SYS"/...
    affinity: Mapping[str, GpuAffinity]  # per GPU
    nic_names: Mapping[str, str]  # "NIC0" -> "mlx5_0"
    legend: Mapping[str, str]  # "PIX" -> description
    anomalies: tuple[str, ...]  # real-world quirks the parser had to work around
    complete: bool = True  # False: partial=True read an output cut short (rows/legends missing)
    missing: tuple[str, ...] = ()  # entities of the header whose rows were not (fully) printed

    def link(self, a: str, b: str) -> str | None:
        return self.links[a][b]

    def nvlink_count(self, a: str, b: str) -> int | None:
        """Number of bonded NVLinks between two GPUs ("NV18" -> 18), None when not NVLink."""
        value = self.links[a][b]
        return int(value[2:]) if value and re.fullmatch(r"NV\d+", value) else None

    def nic_device(self, nic: str) -> str:
        return self.nic_names.get(nic, nic)


def _valid_link(value: str, legend: Mapping[str, str]) -> bool:
    if value == "X" or value in legend:
        return True
    return bool(re.fullmatch(r"NV\d+", value)) and "NV#" in legend


def _cells(line: str, tabbed: bool) -> list[str]:
    return [c.strip() for c in line.split("\t")] if tabbed else line.split()


def parse_topo(text: str, *, partial: bool = False) -> Topology:
    """Parse the matrix, GPU CPU/NUMA affinity, the Legend and the NIC Legend.

    Tab-separated (as printed) and space-expanded copies are both accepted; ANSI underline escapes
    around the header row are removed. A GPU row whose last NIC cell is fused with the CPU Affinity cell
    (seen on a real VM: ``PH0-115``) is recovered when the fused cell is a link-type prefix followed by a
    CPU list; the lost link is ``None`` and the row is listed in ``anomalies``.

    ``partial=True`` reads an output cut short: the rows printed so far (a last row cut mid-line is
    dropped), without the Legend (the documented link types are accepted then) or NIC Legend;
    ``complete`` is False and ``missing`` names the rows that were not printed.
    """
    require_text(TOOL, text)
    lines = [strip_ansi(line).rstrip("\n") for line in split_lines(text)]
    idx = next((i for i, line in enumerate(lines) if "CPU Affinity" in line), None)
    if idx is None:
        raise ParseError(TOOL, "no header row with 'CPU Affinity' - not topo -m output")
    header = lines[idx]
    if any(line.strip() for line in lines[:idx]):
        raise ParseError(TOOL, "unexpected text before the header row")
    entities = header[: header.index("CPU Affinity")].split()
    trailing = [t for t in _TRAILING if t in header]
    if not entities or not all(_ENTITY_RE.match(e) for e in entities) or "GPU0" not in entities:
        raise ParseError(TOOL, "header does not list GPU/NIC columns", line_no=idx + 1, line=header)
    gpus = tuple(e for e in entities if e.startswith("GPU"))
    nics = tuple(e for e in entities if not e.startswith("GPU"))
    tabbed = "\t" in header

    legend: dict[str, str] = {}
    nic_names: dict[str, str] = {}
    section = ""
    rows: dict[str, tuple[int, str]] = {}
    for i in range(idx + 1, len(lines)):
        line, line_no = lines[i], i + 1
        stripped = line.strip()
        if not stripped:
            if section == "matrix":
                section = "after"
            continue
        if stripped in ("Legend:", "NIC Legend:"):
            section = stripped
            continue
        if section == "Legend:":
            lm = _LEGEND_RE.match(stripped)
            if not lm:
                raise ParseError(TOOL, "unrecognised Legend line", line_no=line_no, line=line)
            legend[lm.group("key")] = lm.group("desc")
            continue
        if section == "NIC Legend:":
            nm = _NIC_LEGEND_RE.match(stripped)
            if not nm:
                raise ParseError(TOOL, "unrecognised NIC Legend line", line_no=line_no, line=line)
            nic_names[nm.group("nic")] = nm.group("dev")
            continue
        name = _cells(line, tabbed)[0]
        if section not in ("", "matrix") or name not in entities or name in rows:
            raise ParseError(TOOL, "unexpected line in matrix", line_no=line_no, line=line)
        section = "matrix"
        rows[name] = (line_no, line)

    missing = [e for e in entities if e not in rows]
    nic_legend_needed = [n for n in nics if n.startswith("NIC")]
    nic_legend_ok = not nic_legend_needed or sorted(nic_names) == sorted(nic_legend_needed)
    if not partial:
        if missing:
            raise ParseError(TOOL, f"matrix rows missing for {missing} - output truncated")
        if not legend:
            raise ParseError(TOOL, "no 'Legend:' section - output truncated")
        if not nic_legend_ok:
            raise ParseError(TOOL, f"NIC Legend does not map {nic_legend_needed} - output truncated")
    complete = not missing and bool(legend) and nic_legend_ok
    legend_in_use = legend or _DOCUMENTED_LEGEND
    last_text_line = max(i + 1 for i, line in enumerate(lines) if line.strip())

    links: dict[str, dict[str, str | None]] = {}
    affinity: dict[str, GpuAffinity] = {}
    anomalies: list[str] = []
    for name in [e for e in entities if e in rows]:
        line_no, line = rows[name]
        try:
            row_links, row_affinity = _row(name, line, line_no, entities, trailing, tabbed, legend_in_use)
        except ParseError:
            if not (partial and line_no == last_text_line):
                raise
            missing.append(name)  # the last line printed, cut mid-row
            anomalies.append(f"{name}: row cut short")
            complete = False
            continue
        fused, links[name] = row_links
        anomalies += fused
        if row_affinity is not None:
            affinity[name] = row_affinity
    for a in links:
        for b in links:
            if links[a][b] is not None and links[b][a] is not None and links[a][b] != links[b][a]:
                raise ParseError(
                    TOOL, f"matrix not symmetric: {a}/{b}={links[a][b]} but {b}/{a}={links[b][a]}"
                )
    missing_names = tuple(e for e in entities if e in missing)
    return Topology(gpus, nics, links, affinity, nic_names, legend, tuple(anomalies), complete, missing_names)


def _row(
    name: str,
    line: str,
    line_no: int,
    entities: list[str],
    trailing: list[str],
    tabbed: bool,
    legend: Mapping[str, str],
) -> tuple[tuple[list[str], dict[str, str | None]], GpuAffinity | None]:
    """One matrix row: (fused-cell anomalies, its links) and, for a GPU, its affinity."""
    n = len(entities)
    anomalies: list[str] = []
    cells = _cells(line, tabbed)[1:]
    if not tabbed:
        cells = [c for c in cells if c]
    link_cells: list[str | None] = list(cells[:n])
    rest = cells[n:]
    if name.startswith("GPU") and len(link_cells) == n and not _valid_link(link_cells[-1] or "", legend):
        fused = link_cells[-1] or ""
        m = re.fullmatch(r"([A-Z]+)(\d[\d,\-]*)", fused)
        if not (m and any(k.startswith(m.group(1)) for k in legend) and is_cpulist(m.group(2))):
            raise ParseError(TOOL, f"invalid link value {fused!r}", line_no=line_no, line=line)
        anomalies.append(f"{name}: {entities[-1]} cell fused with CPU Affinity ({fused!r})")
        link_cells[-1] = None
        rest = [m.group(2), *rest]
    for col, value in zip(entities, link_cells, strict=False):
        if value is not None and not _valid_link(value, legend):
            raise ParseError(
                TOOL, f"invalid link value {value!r} for {name}/{col}", line_no=line_no, line=line
            )
    if len(link_cells) != n:
        raise ParseError(TOOL, f"row {name} has {len(link_cells)} link cells, expected {n}", line_no=line_no)
    if link_cells[entities.index(name)] != "X":
        raise ParseError(TOOL, f"row {name} has no 'X' on the diagonal", line_no=line_no, line=line)
    row_links = dict(zip(entities, link_cells, strict=True))
    if name.startswith("GPU"):
        return (anomalies, row_links), _affinity(name, rest, trailing, tabbed, line_no, line)
    if any(rest):
        raise ParseError(TOOL, f"NIC row {name} has affinity values", line_no=line_no, line=line)
    return (anomalies, row_links), None


def _affinity(
    name: str, rest: list[str], trailing: list[str], tabbed: bool, line_no: int, line: str
) -> GpuAffinity:
    if tabbed:
        # nvidia-smi prints "cpu\tnuma\t\tgpu-numa-id": one empty cell before GPU NUMA ID; CPU may be empty.
        values = [rest[0] if rest else "", rest[1] if len(rest) > 1 else ""]
        if "GPU NUMA ID" in trailing:
            tail = [c for c in rest[2:] if c]
            if len(tail) != 1:
                raise ParseError(TOOL, f"row {name}: cannot read GPU NUMA ID", line_no=line_no, line=line)
            values.append(tail[0])
        elif any(rest[2:]):
            raise ParseError(TOOL, f"row {name}: extra cells after NUMA Affinity", line_no=line_no, line=line)
    else:
        values = rest
    if len(values) != len(trailing):
        raise ParseError(TOOL, f"row {name}: expected {trailing}, got {values}", line_no=line_no, line=line)
    cpu, numa = values[0], values[1]
    for what, value in (("CPU Affinity", cpu), ("NUMA Affinity", numa)):
        if value not in ("", "N/A") and not is_cpulist(value):
            raise ParseError(
                TOOL, f"row {name}: {what} {value!r} is not a CPU/node list", line_no=line_no, line=line
            )
    gpu_numa: int | None = None
    if len(values) > 2 and values[2] != "N/A":
        if not values[2].isdigit():
            raise ParseError(TOOL, f"row {name}: GPU NUMA ID {values[2]!r}", line_no=line_no, line=line)
        gpu_numa = int(values[2])
    cpu_v = cpu if cpu not in ("", "N/A") else None
    numa_v = numa if numa not in ("", "N/A") else None
    return GpuAffinity(
        cpu_affinity=cpu_v,
        cpus=parse_cpulist(cpu_v) if cpu_v else (),
        numa_affinity=numa_v,
        numa_nodes=parse_cpulist(numa_v) if numa_v else (),
        gpu_numa_id=gpu_numa,
    )
