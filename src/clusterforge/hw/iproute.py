"""iproute2 ``ip -j route show [default]`` JSON: the kernel's routes as ``ip`` prints them with ``-j``.

The format, as iproute2 (ip/iproute.c print_route) writes it and the captures in tests/fixtures/real/
(``ip-j-route*``) show it: one JSON array, one object per route. ``dst`` is ``"default"`` for a default
route, else a prefix or an address; ``gateway`` and ``dev`` name the next hop of a single-path route;
a multipath (ECMP) route has neither and carries ``nexthops`` instead (objects with ``gateway``, ``dev``,
``weight``, ``flags``); ``metric`` is absent when it is 0 (the kernel then prefers the route over any with a
metric); ``type`` is printed only for routes that are not unicast (``blackhole``, ``unreachable``,
``prohibit``...), which have no next hop; ``flags`` lists ``linkdown`` (the next hop's netdev has no carrier),
``onlink`` ...; ``protocol``, ``scope`` and ``prefsrc`` appear when set. A gateway of another family is an
object ``via`` with ``family`` and ``host``. No route at all is ``[]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._common import load_json
from .errors import ParseError

TOOL = "ip route"


@dataclass(frozen=True)
class NextHop:
    gateway: str | None  # None: on-link (no router)
    dev: str
    weight: int | None  # ECMP weight; None for a single-path route
    flags: tuple[str, ...]

    @property
    def linkdown(self) -> bool:
        return "linkdown" in self.flags


@dataclass(frozen=True)
class Route:
    dst: str  # "default", a prefix or an address
    type: str  # "unicast" unless ip printed another type
    protocol: str | None
    metric: int  # 0 when ip printed none
    scope: str | None
    prefsrc: str | None
    hops: tuple[NextHop, ...]  # one for a single-path route, several for ECMP, none for blackhole & co
    flags: tuple[str, ...]

    @property
    def is_default(self) -> bool:
        return self.dst == "default"

    @property
    def linkdown(self) -> bool:
        return "linkdown" in self.flags or any(h.linkdown for h in self.hops)


def _str(obj: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ParseError(TOOL, f"{where}: {key!r} should be a non-empty string, found {value!r}")
    return value


def _flags(obj: dict[str, Any], where: str) -> tuple[str, ...]:
    flags = obj.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ParseError(TOOL, f"{where}: 'flags' should be a list of strings, found {flags!r}")
    return tuple(flags)


def _int(obj: dict[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(TOOL, f"{where}: {key!r} should be a non-negative integer, found {value!r}")
    return value


def _gateway(obj: dict[str, Any], where: str) -> str | None:
    gw = _str(obj, "gateway", where)
    via = obj.get("via")
    if gw is None and via is not None:
        if not isinstance(via, dict) or not isinstance(via.get("host"), str):
            raise ParseError(TOOL, f"{where}: 'via' should be an object with a 'host', found {via!r}")
        gw = str(via["host"])
    return gw


def _hop(obj: Any, where: str, multipath: bool) -> NextHop:
    if not isinstance(obj, dict):
        raise ParseError(TOOL, f"{where}: expected an object, found {type(obj).__name__}")
    dev = _str(obj, "dev", where, required=True)
    assert dev is not None
    return NextHop(
        _gateway(obj, where), dev, _int(obj, "weight", where) if multipath else None, _flags(obj, where)
    )


def _route(obj: Any, i: int) -> Route:
    where = f"route {i}"
    if not isinstance(obj, dict):
        raise ParseError(TOOL, f"{where}: expected an object, found {type(obj).__name__}")
    dst = _str(obj, "dst", where, required=True)
    assert dst is not None
    kind = _str(obj, "type", where) or "unicast"
    nexthops = obj.get("nexthops")
    if nexthops is not None:
        if not isinstance(nexthops, list) or not nexthops:
            raise ParseError(TOOL, f"{where}: 'nexthops' should be a non-empty list, found {nexthops!r}")
        hops = tuple(_hop(h, f"{where} nexthop {j}", True) for j, h in enumerate(nexthops))
    elif "dev" in obj:
        hops = (_hop(obj, where, False),)
    elif kind == "unicast":
        raise ParseError(TOOL, f"{where} ({dst}): a unicast route with neither 'dev' nor 'nexthops'")
    else:
        hops = ()
    return Route(
        dst=dst,
        type=kind,
        protocol=_str(obj, "protocol", where),
        metric=_int(obj, "metric", where) or 0,
        scope=_str(obj, "scope", where),
        prefsrc=_str(obj, "prefsrc", where),
        hops=hops,
        flags=_flags(obj, where),
    )


def parse(text: str) -> tuple[Route, ...]:
    """Every route of ``ip -j route show [...]``, in the order ip printed them (the kernel's table order)."""
    doc = load_json(TOOL, text, list, "run with -j")
    return tuple(_route(r, i) for i, r in enumerate(doc))


def default_routes(routes: tuple[Route, ...]) -> tuple[Route, ...]:
    """The unicast default routes, the one the kernel uses first: lowest metric, then table order."""
    found = [r for r in routes if r.is_default and r.type == "unicast"]
    return tuple(sorted(found, key=lambda r: r.metric))  # sorted() is stable: table order breaks ties
