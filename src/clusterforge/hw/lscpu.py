"""``lscpu`` output (util-linux), including flags lines wrapped by a terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import parse_cpulist, require_text, split_lines
from .errors import ParseError

TOOL = "lscpu"

_KV_RE = re.compile(r"^(?P<key>[A-Za-z][^:]*):(?:\s+(?P<value>\S.*)?)?$")
_NODE_RE = re.compile(r"^NUMA node(?P<node>\d+) CPU\(s\)$")


@dataclass(frozen=True)
class Lscpu:
    fields: Mapping[str, str]  # every "Key: value" as printed (wrapped values re-joined)
    architecture: str
    model_name: str | None
    vendor_id: str | None
    cpus: int
    online_cpus: tuple[int, ...]
    threads_per_core: int | None
    cores_per_socket: int | None
    sockets: int | None
    numa_nodes: int
    numa_node_cpus: Mapping[int, tuple[int, ...]]  # node -> CPU numbers
    numa_node_cpulists: Mapping[int, str]  # node -> "0-15,128-143" as printed
    hypervisor_vendor: str | None
    flags: tuple[str, ...]

    def has_flag(self, flag: str) -> bool:
        return flag in self.flags


def _int(fields: Mapping[str, str], key: str) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    if not value.isdigit():
        raise ParseError(TOOL, f"{key} is not an integer: {value!r}")
    return int(value)


def parse_lscpu(text: str) -> Lscpu:
    """Parse ``lscpu``. Requires Architecture, CPU(s), NUMA node(s) and every ``NUMA nodeN CPU(s)`` line.

    A value wrapped by the terminal (continuation lines indented to the value column) is re-joined
    exactly: the indentation is removed and the pieces concatenated, so mid-word breaks heal.
    """
    require_text(TOOL, text)
    fields: dict[str, str] = {}
    last_key: str | None = None
    value_col = 0
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip("\n")
        if not line.strip():
            last_key = None
            continue
        if (
            line[:1].isspace()
            and last_key is not None
            and len(line) > value_col
            and line[:value_col].isspace()
        ):
            fields[last_key] += line[
                value_col:
            ]  # value wrapped by the terminal, indented to the value column
            continue
        m = _KV_RE.match(
            line.lstrip()
        )  # indented keys: util-linux >= 2.37 tree layout ("NUMA:" > "NUMA node(s):")
        if not m:
            raise ParseError(TOOL, "expected 'Key: value'", line_no=line_no, line=raw)
        key = m.group("key").strip()
        if key in fields:
            raise ParseError(TOOL, f"{key} repeated", line_no=line_no, line=raw)
        indent = len(line) - len(line.lstrip())
        fields[key] = m.group("value") or ""
        last_key, value_col = key, indent + m.start("value") if m.group("value") else len(line)
    fields = {k: v.strip() for k, v in fields.items()}
    for key in ("Architecture", "CPU(s)", "NUMA node(s)"):
        if key not in fields:
            raise ParseError(TOOL, f"missing {key!r} - output truncated or not lscpu")
    cpus = _int(fields, "CPU(s)")
    nodes = _int(fields, "NUMA node(s)")
    assert cpus is not None and nodes is not None
    cpulists = {int(nm.group("node")): v for k, v in fields.items() if (nm := _NODE_RE.match(k))}
    if sorted(cpulists) != list(range(nodes)):
        raise ParseError(
            TOOL, f"NUMA node(s) is {nodes} but CPU lists are given for nodes {sorted(cpulists)}"
        )
    try:
        node_cpus = {n: parse_cpulist(v) for n, v in cpulists.items()}
        online = parse_cpulist(fields["On-line CPU(s) list"]) if "On-line CPU(s) list" in fields else ()
    except ValueError as exc:
        raise ParseError(TOOL, str(exc)) from None
    if online and sorted(c for v in node_cpus.values() for c in v) != list(online):
        raise ParseError(TOOL, "NUMA node CPU lists do not cover the on-line CPUs")
    return Lscpu(
        fields=fields,
        architecture=fields["Architecture"],
        model_name=fields.get("Model name"),
        vendor_id=fields.get("Vendor ID"),
        cpus=cpus,
        online_cpus=online,
        threads_per_core=_int(fields, "Thread(s) per core"),
        cores_per_socket=_int(fields, "Core(s) per socket"),
        sockets=_int(fields, "Socket(s)"),
        numa_nodes=nodes,
        numa_node_cpus=node_cpus,
        numa_node_cpulists=cpulists,
        hypervisor_vendor=fields.get("Hypervisor vendor"),
        flags=tuple(fields.get("Flags", "").split()),
    )
