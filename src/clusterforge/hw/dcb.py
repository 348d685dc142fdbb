"""iproute2 ``dcb -j`` JSON (the Linux DCB netlink tool): ``pfc show``, ``app show``, ``apptrust show``.

Formats, from iproute2's dcb/*.c: ``dcb -j pfc show dev X`` is one object with ``pfc_cap``, ``macsec_bypass``
(a JSON boolean), ``delay`` and ``prio_pfc`` (eight booleans, index = priority; ``requests`` and
``indications`` counter arrays with ``-s``). ``dcb -j app show dev X`` holds one array per selector
(``dscp_prio``, ``pcp_prio``, ``ethtype_prio``, ``stream_port_prio``, ``dgram_port_prio``, ``port_prio``:
``[key, priority]`` pairs, numeric keys in JSON) and ``default_prio`` (a list of priorities); since iproute2
6.5 each pair carries a third element, the separator string ``" "``, which is ignored here. A selector with
no entry is absent. ``dcb -j apptrust show dev X`` (iproute2 6.2+) is ``{"order": [selector, ...]}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._common import load_json
from .errors import ParseError

TOOL = "dcb"
SELECTORS = ("ethtype", "stream-port", "dgram-port", "port", "dscp", "pcp")


@dataclass(frozen=True)
class DcbPfc:
    pfc_cap: int | None
    macsec_bypass: bool | None
    delay: int | None
    prio_pfc: tuple[bool, ...]  # 8 entries, index = priority

    @property
    def priorities(self) -> tuple[int, ...]:
        """The priorities with PFC enabled."""
        return tuple(i for i, on in enumerate(self.prio_pfc) if on)


@dataclass(frozen=True)
class DcbApp:
    dscp_prio: tuple[tuple[int, int], ...]  # (DSCP, priority) entries, in the tool's order
    default_prio: tuple[int, ...]

    def prios_of_dscp(self, dscp: int) -> tuple[int, ...]:
        """Every priority the APP table gives ``dscp`` (normally one; none when it has no entry)."""
        return tuple(sorted({p for d, p in self.dscp_prio if d == dscp}))


def _object(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = load_json(TOOL, text, dict, "run with -j")
    return doc


def _bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("on", "off"):  # plain-text spelling, accepted for robustness
        return value == "on"
    raise ParseError(TOOL, f"{what}: expected a boolean, found {value!r}")


def _int(value: Any, what: str, lo: int = 0, hi: int = 1 << 32) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParseError(TOOL, f"{what}: expected an integer {lo}..{hi}, found {value!r}")
    return value


def _opt_int(doc: dict[str, Any], key: str) -> int | None:
    return None if key not in doc else _int(doc[key], key)


def parse_pfc(text: str) -> DcbPfc:
    """``dcb -j pfc show dev X``: ``prio_pfc`` (eight booleans) is required."""
    doc = _object(text)
    arr = doc.get("prio_pfc")
    if not isinstance(arr, list) or len(arr) != 8:
        raise ParseError(TOOL, f"pfc: expected prio_pfc with 8 entries, found {arr!r}")
    return DcbPfc(
        pfc_cap=_opt_int(doc, "pfc_cap"),
        macsec_bypass=None if "macsec_bypass" not in doc else _bool(doc["macsec_bypass"], "macsec_bypass"),
        delay=_opt_int(doc, "delay"),
        prio_pfc=tuple(_bool(v, f"prio_pfc[{i}]") for i, v in enumerate(arr)),
    )


def _pairs(doc: dict[str, Any], key: str) -> tuple[tuple[int, int], ...]:
    arr = doc.get(key, [])
    if not isinstance(arr, list):
        raise ParseError(TOOL, f"app: {key} is not a list: {arr!r}")
    out = []
    for entry in arr:
        if not isinstance(entry, list) or len(entry) < 2 or any(not isinstance(x, str) for x in entry[2:]):
            raise ParseError(TOOL, f"app: {key} entry is not [key, priority]: {entry!r}")
        out.append((_int(entry[0], f"{key} key", 0, 63), _int(entry[1], f"{key} priority", 0, 7)))
    return tuple(out)


def parse_app(text: str) -> DcbApp:
    """``dcb -j app show dev X``: an empty table is ``{}``."""
    doc = _object(text)
    default = doc.get("default_prio", [])
    if not isinstance(default, list):
        raise ParseError(TOOL, f"app: default_prio is not a list: {default!r}")
    return DcbApp(
        dscp_prio=_pairs(doc, "dscp_prio"),
        default_prio=tuple(_int(p, "default_prio", 0, 7) for p in default),
    )


def parse_apptrust(text: str) -> tuple[str, ...]:
    """``dcb -j apptrust show dev X``: the trusted selectors, most trusted first."""
    doc = _object(text)
    order = doc.get("order", [])
    if not isinstance(order, list) or any(s not in SELECTORS for s in order):
        raise ParseError(TOOL, f"apptrust: expected order as a list of {SELECTORS}, found {order!r}")
    return tuple(order)
