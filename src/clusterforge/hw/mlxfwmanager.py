"""``mlxfwmanager`` (MFT; also printed by the MLNX_OFED installer): per adapter, its identity and the
``Versions: Current Available`` table (FW, PXE, UEFI, NVMe ...), and the update status."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "mlxfwmanager"
_DEVICE_RE = re.compile(r"^Device #(?P<n>\d+):$")
_FIELD_RE = re.compile(r"^  (?P<key>[A-Za-z][A-Za-z ]*?):\s+(?P<value>.*?)\s*$")
_VERSION_ROW_RE = re.compile(
    r"^\s{3,}(?P<kind>[A-Za-z][A-Za-z0-9_]*)\s+(?P<current>\S+)\s+(?P<available>\S+)\s*$"
)


@dataclass(frozen=True)
class FwDevice:
    index: int
    device_type: str
    part_number: str
    description: str
    psid: str
    pci_device: str  # BDF ("02:00.0") or an mst device path
    base_guid: str | None
    base_mac: str | None
    versions: Mapping[str, tuple[str, str | None]]  # "FW" -> (current, available or None for N/A)
    status: str

    @property
    def firmware(self) -> str:
        return self.versions["FW"][0]


def _device(index: int, fields: dict[str, str], versions: dict[str, tuple[str, str | None]]) -> FwDevice:
    need = ("Device Type", "Part Number", "PSID", "PCI Device Name", "Status")
    missing = [k for k in need if k not in fields]
    if missing or "FW" not in versions:
        raise ParseError(
            TOOL, f"Device #{index}: missing {missing or ['FW version row']} - output truncated?"
        )
    return FwDevice(
        index,
        fields["Device Type"],
        fields["Part Number"],
        fields.get("Description", ""),
        fields["PSID"],
        fields["PCI Device Name"],
        fields.get("Base GUID"),
        fields.get("Base MAC"),
        dict(versions),
        fields["Status"],
    )


def parse(text: str) -> list[FwDevice]:
    """Every ``Device #n:`` block; a block without its FW row or ``Status:`` line is a truncated output."""
    require_text(TOOL, text)
    devices: list[FwDevice] = []
    current: tuple[int, dict[str, str], dict[str, tuple[str, str | None]]] | None = None
    in_versions = False
    for no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip()
        if not line.strip() or set(line.strip()) == {"-"}:
            continue
        if line.startswith("Querying Mellanox devices firmware"):
            continue
        if m := _DEVICE_RE.match(line):
            if current:
                devices.append(_device(*current))
            current, in_versions = (int(m.group("n")), {}, {}), False
            continue
        if current is None:
            raise ParseError(TOOL, "text before the first 'Device #n:' block", line_no=no, line=raw)
        if in_versions and (vm := _VERSION_ROW_RE.match(line)):
            avail = vm.group("available")
            current[2][vm.group("kind")] = (vm.group("current"), None if avail == "N/A" else avail)
            continue
        fm = _FIELD_RE.match(line)
        if not fm:
            raise ParseError(TOOL, "unrecognised line", line_no=no, line=raw)
        key, value = fm.group("key"), fm.group("value")
        in_versions = key == "Versions"
        if key != "Versions":
            current[1][key] = value
    if current:
        devices.append(_device(*current))
    if not devices:
        raise ParseError(TOOL, "no 'Device #n:' blocks")
    return devices
