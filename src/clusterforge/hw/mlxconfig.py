"""``mlxconfig -d <dev> q`` / ``mstconfig -d <dev> q`` output (with ``-e``: Default/Current/Next Boot)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._common import is_elision, require_text, split_lines
from .errors import ParseError

TOOL = "mlxconfig query"

_DEVICE_RE = re.compile(r"^Device #(?P<n>\d+):$")
_INFO_RE = re.compile(r"^(?P<key>Device type|Name|Description|Device):\s*(?P<value>.*)$")
_CONFIG_HEADER_RE = re.compile(r"^Configurations:\s+(?P<cols>(?:Default|Current|Next Boot|New)(?:\s+.*)?)$")
_PARAM_RE = re.compile(
    r"^(?P<star>\*)?\s*(?P<ro>RO\s)?\s*(?P<name>[A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?)\s+(?P<values>\S.*)$"
)
_VALUE_RE = re.compile(r"^(?P<label>.*)\((?P<code>-?\d+)\)$")
_NOTES = ("The '*' shows parameters", "The 'RO' shows parameters")


@dataclass(frozen=True)
class MlxParam:
    name: str
    default: str | None  # only with "Default" column (mlxconfig -e)
    current: str | None  # only with "Current" column; None means not shown, not "unset"
    next_boot: str  # value the firmware applies on next boot/reset
    modified: bool  # row flagged "*" (next value differs from default/current)
    read_only: bool  # row flagged "RO"

    @staticmethod
    def code(value: str | None) -> int | None:
        """Numeric code of a value: "True(1)" -> 1, "ETH(2)" -> 2, "16" -> 16, "Array[0..7]" -> None."""
        if value is None:
            return None
        m = _VALUE_RE.match(value)
        if m:
            return int(m.group("code"))
        return int(value) if re.fullmatch(r"-?\d+", value) else None

    @property
    def pending_change(self) -> bool:
        return self.current is not None and self.current != self.next_boot


@dataclass(frozen=True)
class MlxconfigDevice:
    index: int
    device_type: str
    name: str | None  # "N/A" -> None
    description: str | None
    device: str  # as passed with -d (/dev/mst/..., PCI address or mlx5_N)
    columns: tuple[str, ...]  # ("Next Boot",) or ("Default", "Current", "Next Boot")
    params: Mapping[str, MlxParam]

    def next_boot(self, name: str) -> str:
        return self.params[name].next_boot


def parse_query(text: str, *, partial: bool = False) -> list[MlxconfigDevice]:
    """One entry per ``Device #N:`` block. ``partial=True`` accepts excerpts with ``...`` elision lines."""
    require_text(TOOL, text)
    blocks: list[tuple[int, int, dict[str, str], list[str] | None, dict[str, MlxParam]]] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.rstrip()
        if not line.strip() or line.strip() == "----------":
            continue
        if is_elision(line):
            if partial:
                continue
            raise ParseError(TOOL, "elided output ('...')", line_no=line_no, line=raw)
        if line.startswith(("-E-", "-W-")):
            raise ParseError(TOOL, f"mlxconfig reported: {line}", line_no=line_no)
        if m := _DEVICE_RE.match(line):
            blocks.append((int(m.group("n")), line_no, {}, None, {}))
            continue
        if not blocks:
            raise ParseError(TOOL, "expected 'Device #N:'", line_no=line_no, line=raw)
        _, _, info, cols, params = blocks[-1]
        if cols is None:
            if m := _INFO_RE.match(line):
                info[m.group("key")] = m.group("value").strip()
            elif m := _CONFIG_HEADER_RE.match(line):
                columns = re.findall(r"Default|Current|Next Boot|New", m.group("cols"))
                if "Next Boot" not in columns or columns[-1] == "Default":
                    raise ParseError(
                        TOOL, "Configurations header without 'Next Boot'", line_no=line_no, line=raw
                    )
                blocks[-1] = (*blocks[-1][:3], columns, params)
            else:
                raise ParseError(TOOL, "unrecognised device-info line", line_no=line_no, line=raw)
            continue
        if line.startswith(_NOTES):
            continue
        pm = _PARAM_RE.match(line) if line[:1] in ("*", " ") else None
        values = pm.group("values").split() if pm else []
        if not pm or len(values) != len(cols):
            raise ParseError(
                TOOL, f"expected a parameter row with {len(cols)} value(s)", line_no=line_no, line=raw
            )
        named = dict(zip(cols, values, strict=True))
        if pm.group("name") in params:
            raise ParseError(TOOL, f"parameter {pm.group('name')} repeated", line_no=line_no)
        params[pm.group("name")] = MlxParam(
            pm.group("name"),
            named.get("Default"),
            named.get("Current"),
            named["Next Boot"],
            bool(pm.group("star")),
            bool(pm.group("ro")),
        )
    if not blocks:
        raise ParseError(TOOL, "no 'Device #N:' block")
    out = []
    for index, line_no, info, cols, params in blocks:
        missing = [k for k in ("Device type", "Device") if k not in info]
        if missing or cols is None:
            raise ParseError(
                TOOL,
                f"Device #{index} lacks {missing or ['Configurations:']} - output truncated",
                line_no=line_no,
            )
        if not params:
            raise ParseError(
                TOOL, f"Device #{index} has no configuration rows - output truncated", line_no=line_no
            )
        na = {"N/A", ""}
        out.append(
            MlxconfigDevice(
                index,
                info["Device type"],
                None if info.get("Name", "") in na else info["Name"],
                None if info.get("Description", "") in na else info["Description"],
                info["Device"],
                tuple(cols),
                params,
            )
        )
    return out
