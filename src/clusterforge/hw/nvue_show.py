"""Cumulus Linux NVUE read-back: the JSON trees NVUE prints (`nv show ... -o json`, the REST API's GET).

Two documents are read:

- the root tree at the applied revision (`nv show --applied -o json`, REST ``GET /nvue_v1/?rev=applied``):
  its ``qos`` branch (the same keys as the ``nv set qos ...`` tree: roce, mapping, pfc, congestion-control,
  egress-queue-mapping, egress-scheduler, pfc-watchdog) and its ``interface`` branch (each port's configured
  ``link`` mtu / speed / state and ``qos pfc-watchdog state``);
- the operational interface tree (`nv show interface -o json`, REST ``GET /nvue_v1/interface``): per
  interface ``link`` mtu, speed (``"400G"``; absent without carrier) and state (``{"up": {}}``).

NVUE writes a state as a one-key object (``{"up": {}}``) and keys every map by a string (``"3"``); numbers
are JSON integers. Only the ``default-global`` profile is read (the one clusterforge renders). Anything of
the wrong type raises ParseError naming the path; an absent branch is empty, not an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _common
from .errors import ParseError

PROFILE = "default-global"
APPLIED_TOOL = "nv show --applied -o json"
INTERFACE_TOOL = "nv show interface -o json"
_SPEED = re.compile(r"^(\d+)G$")


@dataclass(frozen=True)
class NvLink:
    """One interface's link: `speed_gbps` None for ``auto`` or no speed shown; `state` ``up``/``down``."""

    name: str
    type: str | None
    mtu: int | None
    speed: str | None
    speed_gbps: int | None
    state: str | None
    pfc_watchdog: str | None = None  # interface qos pfc-watchdog state (applied tree only)


@dataclass(frozen=True)
class EcnClass:
    """congestion-control of one traffic class (thresholds in bytes)."""

    ecn: str | None
    red: str | None
    min_threshold: int | None
    max_threshold: int | None
    probability: int | None


@dataclass(frozen=True)
class NvQos:
    roce_enable: str | None = None
    roce_mode: str | None = None
    trust: str | None = None
    dscp: dict[int, int] = field(default_factory=dict)  # DSCP -> switch priority
    pcp: dict[int, int] = field(default_factory=dict)  # PCP -> switch priority
    pfc_priorities: tuple[int, ...] = ()
    pfc: dict[str, Any] = field(default_factory=dict)  # tx, rx, cable-length, ... as given
    ecn: dict[int, EcnClass] = field(default_factory=dict)  # traffic class -> congestion-control
    queue_map: dict[int, int] = field(default_factory=dict)  # switch priority -> traffic class
    scheduler: dict[int, dict[str, Any]] = field(default_factory=dict)  # traffic class -> mode, bw-percent
    pfc_watchdog: dict[str, Any] = field(default_factory=dict)  # polling-interval, robustness


@dataclass(frozen=True)
class NvApplied:
    version: str | None
    qos: NvQos
    interfaces: tuple[NvLink, ...] | None  # None when the tree has no interface branch


def _obj(v: object, tool: str, path: str) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ParseError(tool, f"{path}: expected an object, found {v!r}")
    return v


def _int(v: object, tool: str, path: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ParseError(tool, f"{path}: expected an integer, found {v!r}")
    return v


def _str(v: object, tool: str, path: str) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ParseError(tool, f"{path}: expected a string, found {v!r}")
    return v


def _key(k: str, tool: str, path: str) -> int:
    if not k.isdigit():
        raise ParseError(tool, f"{path}: expected a number as key, found {k!r}")
    return int(k)


def _state(v: object, tool: str, path: str) -> str | None:
    """NVUE's one-key state object ({"up": {}}) -> "up"; a plain string is taken as is."""
    if v is None or isinstance(v, str):
        return v
    s = _obj(v, tool, path)
    if len(s) != 1:
        raise ParseError(tool, f"{path}: expected one state, found {dict(s)!r}")
    return next(iter(s))


def _speed_gbps(speed: str | None) -> int | None:
    m = _SPEED.match(speed or "")
    return int(m.group(1)) if m else None


def interfaces_from(doc: Mapping[str, Any], tool: str = INTERFACE_TOOL) -> list[NvLink]:
    """Interfaces of an NVUE interface tree (name -> {type, link, qos}), in the tree's order."""
    out = []
    for name, raw in doc.items():
        e = _obj(raw, tool, name)
        link = _obj(e.get("link"), tool, f"{name}.link")
        speed = _str(link.get("speed"), tool, f"{name}.link.speed")
        wd = _obj(
            _obj(e.get("qos"), tool, f"{name}.qos").get("pfc-watchdog"), tool, f"{name}.qos.pfc-watchdog"
        )
        out.append(
            NvLink(
                name=str(name),
                type=_str(e.get("type"), tool, f"{name}.type"),
                mtu=_int(link.get("mtu"), tool, f"{name}.link.mtu"),
                speed=speed,
                speed_gbps=_speed_gbps(speed),
                state=_state(link.get("state"), tool, f"{name}.link.state"),
                pfc_watchdog=_state(wd.get("state"), tool, f"{name}.qos.pfc-watchdog.state"),
            )
        )
    return out


def _profile(qos: Mapping[str, Any], branch: str, tool: str) -> Mapping[str, Any]:
    return _obj(_obj(qos.get(branch), tool, f"qos.{branch}").get(PROFILE), tool, f"qos.{branch}.{PROFILE}")


def _int_map(m: Mapping[str, Any], leaf: str, tool: str, path: str) -> dict[int, int]:
    out = {}
    for k, v in _obj(m, tool, path).items():
        got = _int(_obj(v, tool, f"{path}.{k}").get(leaf), tool, f"{path}.{k}.{leaf}")
        if got is None:
            raise ParseError(tool, f"{path}.{k}: no {leaf}")
        out[_key(k, tool, path)] = got
    return out


def qos_from(qos: Mapping[str, Any], tool: str = APPLIED_TOOL) -> NvQos:
    """The ``qos`` branch of an NVUE tree."""
    roce = _obj(qos.get("roce"), tool, "qos.roce")
    mapping = _profile(qos, "mapping", tool)
    pfc = _profile(qos, "pfc", tool)
    cc = _obj(_profile(qos, "congestion-control", tool).get("traffic-class"), tool, "congestion-control")
    ecn = {}
    for k, v in cc.items():
        p = f"qos.congestion-control.{PROFILE}.traffic-class.{k}"
        e = _obj(v, tool, p)
        ecn[_key(k, tool, p)] = EcnClass(
            ecn=_str(e.get("ecn"), tool, f"{p}.ecn"),
            red=_str(e.get("red"), tool, f"{p}.red"),
            min_threshold=_int(e.get("min-threshold"), tool, f"{p}.min-threshold"),
            max_threshold=_int(e.get("max-threshold"), tool, f"{p}.max-threshold"),
            probability=_int(e.get("probability"), tool, f"{p}.probability"),
        )
    sched = _obj(_profile(qos, "egress-scheduler", tool).get("traffic-class"), tool, "egress-scheduler")
    scheduler = {}
    for k, v in sched.items():
        p = f"qos.egress-scheduler.{PROFILE}.traffic-class.{k}"
        e = _obj(v, tool, p)
        scheduler[_key(k, tool, p)] = {
            "mode": _str(e.get("mode"), tool, f"{p}.mode"),
            "bw-percent": _int(e.get("bw-percent"), tool, f"{p}.bw-percent"),
        }
    pfc_sp = _obj(pfc.get("switch-priority"), tool, f"qos.pfc.{PROFILE}.switch-priority")
    wd = _obj(qos.get("pfc-watchdog"), tool, "qos.pfc-watchdog")
    return NvQos(
        roce_enable=_str(roce.get("enable"), tool, "qos.roce.enable"),
        roce_mode=_str(roce.get("mode"), tool, "qos.roce.mode"),
        trust=_str(mapping.get("trust"), tool, f"qos.mapping.{PROFILE}.trust"),
        dscp=_int_map(mapping.get("dscp") or {}, "switch-priority", tool, f"qos.mapping.{PROFILE}.dscp"),
        pcp=_int_map(mapping.get("pcp") or {}, "switch-priority", tool, f"qos.mapping.{PROFILE}.pcp"),
        pfc_priorities=tuple(sorted(_key(k, tool, "qos.pfc switch-priority") for k in pfc_sp)),
        pfc={k: v for k, v in pfc.items() if k != "switch-priority"},
        ecn=ecn,
        queue_map=_int_map(
            _profile(qos, "egress-queue-mapping", tool).get("switch-priority") or {},
            "traffic-class",
            tool,
            f"qos.egress-queue-mapping.{PROFILE}.switch-priority",
        ),
        scheduler=scheduler,
        pfc_watchdog=dict(wd),
    )


def parse_applied(text: str) -> NvApplied:
    """The root tree at the applied revision; it must have a ``qos`` branch."""
    doc = _common.load_json(APPLIED_TOOL, text, dict)
    if "qos" not in doc:
        raise ParseError(APPLIED_TOOL, f"no qos branch (top-level keys: {', '.join(sorted(doc)) or 'none'})")
    header = _obj(doc.get("header"), APPLIED_TOOL, "header")
    iface = doc.get("interface")
    return NvApplied(
        version=_str(header.get("version"), APPLIED_TOOL, "header.version"),
        qos=qos_from(_obj(doc["qos"], APPLIED_TOOL, "qos")),
        interfaces=None
        if iface is None
        else tuple(interfaces_from(_obj(iface, APPLIED_TOOL, "interface"), APPLIED_TOOL)),
    )


def parse_interfaces(text: str) -> list[NvLink]:
    """`nv show interface -o json`: every interface's link."""
    doc = _common.load_json(INTERFACE_TOOL, text, dict)
    if "qos" in doc or "header" in doc:
        raise ParseError(INTERFACE_TOOL, "this is a root tree (qos/header keys), not the interface tree")
    return interfaces_from(doc)
