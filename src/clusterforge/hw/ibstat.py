"""``ibstat`` output (infiniband-diags / rdma-core)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines, to_float, to_int
from .errors import ParseError

TOOL = "ibstat"

_CA_RE = re.compile(r"^CA '(?P<name>[^']+)'$")
_PORT_RE = re.compile(r"^Port (?P<port>\d+):$")
_KV_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?): ?(?P<value>.*)$")
_CA_KEYS = (
    "CA type",
    "Number of ports",
    "Firmware version",
    "Hardware version",
    "Node GUID",
    "System image GUID",
)
_PORT_KEYS = (
    "State",
    "Physical state",
    "Rate",
    "Base lid",
    "LMC",
    "SM lid",
    "Capability mask",
    "Port GUID",
    "Link layer",
)
_PANIC_RE = re.compile(r"^(ibpanic|ibwarn|ibstat): ")


@dataclass(frozen=True)
class IbPort:
    number: int
    state: str  # "Active", "Down", "Initializing", ...
    physical_state: str  # "LinkUp", "Disabled", "Polling", ...
    rate_gbps: float  # "Rate: 400" -> 400.0
    base_lid: int
    lmc: int
    sm_lid: int
    capability_mask: str
    port_guid: str
    link_layer: str  # "InfiniBand" or "Ethernet"


@dataclass(frozen=True)
class IbCa:
    name: str
    ca_type: str
    num_ports: int
    firmware_version: str
    hardware_version: str
    node_guid: str
    system_image_guid: str
    ports: tuple[IbPort, ...]


@dataclass(frozen=True)
class IbstatReport:
    cas: tuple[IbCa, ...]
    errors: tuple[str, ...]  # "ibpanic: ..." / "ibwarn: ..." lines: ibstat failed part-way


def _build_port(number: int, kv: dict[str, str], ca: str, line_no: int) -> IbPort:
    missing = [k for k in _PORT_KEYS if k not in kv]
    if missing:
        raise ParseError(TOOL, f"CA {ca!r} port {number} lacks {missing} - output truncated", line_no=line_no)
    return IbPort(
        number=number,
        state=kv["State"],
        physical_state=kv["Physical state"],
        rate_gbps=to_float(TOOL, kv["Rate"], "Rate"),
        base_lid=to_int(TOOL, kv["Base lid"], "Base lid"),
        lmc=to_int(TOOL, kv["LMC"], "LMC"),
        sm_lid=to_int(TOOL, kv["SM lid"], "SM lid"),
        capability_mask=kv["Capability mask"],
        port_guid=kv["Port GUID"],
        link_layer=kv["Link layer"],
    )


def parse_report(text: str) -> IbstatReport:
    """Parse every CA block; ``ibpanic:``/``ibwarn:`` lines are returned in ``errors`` instead of raising."""
    require_text(TOOL, text)
    blocks: list[tuple[str, int, dict[str, str], list[tuple[int, int, dict[str, str]]]]] = []
    errors: list[str] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if _PANIC_RE.match(line):
            errors.append(line)
            continue
        if m := _CA_RE.match(line):
            blocks.append((m.group("name"), line_no, {}, []))
            continue
        if not blocks or raw[:1] not in (" ", "\t"):
            raise ParseError(TOOL, "unrecognised line (expected \"CA '<name>'\")", line_no=line_no, line=raw)
        _, _, ca_kv, ports = blocks[-1]
        if pm := _PORT_RE.match(line):
            ports.append((int(pm.group("port")), line_no, {}))
            continue
        kv = _KV_RE.match(line)
        if not kv:
            raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=raw)
        target = ports[-1][2] if ports else ca_kv
        key = kv.group("key")
        if key in target or key not in (_PORT_KEYS if ports else _CA_KEYS):
            raise ParseError(TOOL, f"unexpected or repeated key {key!r}", line_no=line_no, line=raw)
        target[key] = kv.group("value").strip()
    if not blocks:
        raise ParseError(TOOL, "no \"CA '<name>'\" blocks" + (f": {errors[0]}" if errors else ""))
    cas = []
    for name, line_no, ca_kv, ports in blocks:
        missing = [k for k in _CA_KEYS if k not in ca_kv]
        if missing:
            raise ParseError(TOOL, f"CA {name!r} lacks {missing} - output truncated", line_no=line_no)
        num_ports = to_int(TOOL, ca_kv["Number of ports"], "Number of ports", line_no=line_no)
        if len(ports) != num_ports:
            raise ParseError(
                TOOL, f"CA {name!r} says {num_ports} ports but lists {len(ports)}", line_no=line_no
            )
        cas.append(
            IbCa(
                name=name,
                ca_type=ca_kv["CA type"],
                num_ports=num_ports,
                firmware_version=ca_kv["Firmware version"],
                hardware_version=ca_kv["Hardware version"],
                node_guid=ca_kv["Node GUID"],
                system_image_guid=ca_kv["System image GUID"],
                ports=tuple(_build_port(n, kv, name, ln) for n, ln, kv in ports),
            )
        )
    return IbstatReport(tuple(cas), tuple(errors))


def parse(text: str) -> list[IbCa]:
    """Parse ``ibstat``. Raises :class:`ParseError` when ibstat itself failed (``ibpanic:``) because the
    listing is then incomplete; use :func:`parse_report` to get the CAs it printed before failing."""
    report = parse_report(text)
    if report.errors:
        raise ParseError(TOOL, f"ibstat failed part-way, listing incomplete: {report.errors[0]}")
    return list(report.cas)
