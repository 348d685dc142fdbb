"""``gdscheck -p`` (GPUDirect Storage platform check, /usr/local/cuda/gds/tools/gdscheck).

Layout, from real captures of GDS 1.0 to 1.15 (tests/fixtures/real/gdscheck-p__*): every line starts with
one space. A header (``GDS release version: X``, ``nvidia_fs version:  X libcufile version: Y``, since
1.13 ``Platform: x86_64``), then sections headed by ``====`` rules around a title (``ENVIRONMENT:``,
``DRIVER CONFIGURATION:``, ``CUFILE CONFIGURATION:``, ``GPU INFO:``, ``PLATFORM INFO:``).
DRIVER CONFIGURATION rows are ``Name : Supported|Unsupported`` (``NVMe``, ``NFS``, ``WekaFS``, ``DDN
EXAScaler``, ``IBM Spectrum Scale``, ...) and ``--name : value`` sub-rows (``--Mellanox PeerDirect :
Enabled``); CUFILE CONFIGURATION rows are ``key : value`` (the value may be empty or end in spaces);
GPU INFO rows are ``GPU index N <name> bar:1 bar size (MiB):M supports GDS[, IOMMU State: X]``;
PLATFORM INFO ends with ``Platform verification succeeded`` (or another verdict line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "gdscheck"

_RULE = re.compile(r"^=+$")
_VERSION = re.compile(r"^GDS release version:\s*(\S+)$")
_NVFS = re.compile(r"^nvidia_fs version:\s*(\S+)\s+libcufile version:\s*(\S+)$")
_GPU = re.compile(r"^GPU index (\d+) (.+?) bar:(\d+) bar size \(MiB\):(\d+)(?: (supports GDS|.+?))?(?:,|$)")
_ROW = re.compile(r"^(--)?(.+?)\s*:\s*(.*?)\s*$")

#: the DRIVER CONFIGURATION row that says whether GDS serves a shared filesystem type (spec names)
FS_ROWS = {"nfs": "NFS", "lustre": "DDN EXAScaler", "weka": "WekaFS", "gpfs": "IBM Spectrum Scale"}


@dataclass(frozen=True)
class GdsGpu:
    index: int
    name: str
    bar_size_mib: int
    supports_gds: bool


@dataclass(frozen=True)
class GdsCheck:
    gds_version: str
    nvidia_fs_version: str
    libcufile_version: str
    drivers: dict[str, str]  # "NVMe" -> "Supported", "Mellanox PeerDirect" -> "Enabled" (sub-rows too)
    properties: dict[str, str]  # CUFILE CONFIGURATION rows, values stripped
    gpus: tuple[GdsGpu, ...]
    platform: dict[str, str]  # PLATFORM INFO key: value rows (IOMMU, ...)
    verification: str | None  # "Platform verification succeeded" or the line that stands in its place

    @property
    def verified(self) -> bool:
        return self.verification == "Platform verification succeeded"

    def supported(self, row: str) -> bool:
        """Whether the DRIVER CONFIGURATION row ``row`` (e.g. "NVMe", "NFS") says Supported."""
        return self.drivers.get(row) == "Supported"


def parse(text: str) -> GdsCheck:
    require_text(TOOL, text)
    lines = [ln.strip() for ln in split_lines(text)]
    version = nvfs = cufile = None
    section = ""
    drivers: dict[str, str] = {}
    props: dict[str, str] = {}
    platform: dict[str, str] = {}
    gpus: list[GdsGpu] = []
    verification: str | None = None
    titles: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _RULE.match(line) and i + 2 < len(lines) and _RULE.match(lines[i + 2]):
            section = lines[i + 1].rstrip(":")
            titles.append(section)
            i += 3
            continue
        i += 1
        if not line:
            continue
        if m := _VERSION.match(line):
            version = m.group(1)
        elif m := _NVFS.match(line):
            nvfs, cufile = m.group(1), m.group(2)
        elif section == "DRIVER CONFIGURATION":
            row = _ROW.match(line)
            if not row:
                raise ParseError(TOOL, "driver row without ':'", line_no=i, line=line)
            drivers[row.group(2)] = row.group(3)
        elif section == "CUFILE CONFIGURATION":
            row = _ROW.match(line)
            if not row:
                raise ParseError(TOOL, "property row without ':'", line_no=i, line=line)
            props[row.group(2)] = row.group(3)
        elif section == "GPU INFO":
            g = _GPU.match(line)
            if not g:
                raise ParseError(TOOL, "unrecognised GPU INFO row", line_no=i, line=line)
            gpus.append(GdsGpu(int(g.group(1)), g.group(2), int(g.group(4)), g.group(5) == "supports GDS"))
        elif section == "PLATFORM INFO":
            if line.startswith("Platform verification") or ":" not in line:
                verification = line
            else:
                k, _, v = line.partition(":")
                platform[k.strip()] = v.strip()
    if version is None:
        raise ParseError(TOOL, "no 'GDS release version' line: not gdscheck -p output")
    if nvfs is None or cufile is None:
        raise ParseError(TOOL, "no 'nvidia_fs version ... libcufile version' line")
    if "DRIVER CONFIGURATION" not in titles or not drivers:
        raise ParseError(TOOL, "no DRIVER CONFIGURATION section (output cut short?)")
    if "PLATFORM INFO" not in titles:
        raise ParseError(TOOL, "no PLATFORM INFO section (output cut short?)")
    return GdsCheck(version, nvfs, cufile, drivers, props, tuple(gpus), platform, verification)
