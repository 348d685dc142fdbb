"""The ``pause-storm`` fault: a RoCE rail receives PFC pause frames on its lossless priority at a high rate
(a peer or switch port stuck sending XOFF), seen in ``ethtool -S`` as ``rx_prio<P>_pause`` (and the
port's ``rx_pause_ctrl_phy``) rising while the fault is set.

``P`` is the rail's lossless priority from the node's plan desired state (recorded in state.json at
creation as the NIC's ``lossless_priority``), or ``prio=P``. Like :mod:`linkerr`, the counter is computed
from the clock, ``rate x (now - since)`` on top of the value it had when the fault was set; nothing is
rewritten in the background (``ethtool -S`` asks at read time). Clearing the fault stops the growth: the
counters keep what they reached (a real NIC does not reset them when the storm ends), kept in the NIC's
``ethtool`` counters in state.json.
"""

from __future__ import annotations

import time
from typing import Any

from . import state as S

KIND = "pause-storm"
DEFAULT_RATE = 500000.0  # pause frames per second (the counter policy's PFC-storm limit is 100000/s)
KEPT = "ethtool"  # the NIC's counters that moved in the past: name -> value (state.json)


def _now() -> float:
    return time.time()


def rate(params: dict[str, Any]) -> float:
    try:
        value = float(params.get("rate", DEFAULT_RATE))
    except ValueError:
        value = 0.0
    if value <= 0:
        raise ValueError(
            f"{KIND}: rate must be a positive number of pause frames per second, not {params.get('rate')!r}"
        )
    return value


def counters(prio: int) -> tuple[str, ...]:
    """What a PFC storm on ``prio`` moves: the priority's pause counter and the port's pause frames."""
    return (f"rx_prio{prio}_pause", "rx_pause_ctrl_phy")


def _rails(st: dict[str, Any]) -> set[int]:
    return S.targets(st, KIND, "rail", len(st["nics"]))


def _prio(nic: dict[str, Any], params: dict[str, Any]) -> int:
    given = params.get("prio")
    prio = nic.get("lossless_priority") if given in (None, "") else given
    if prio is None:
        raise ValueError(
            f"{KIND}: rail {nic['rail']} has no lossless priority in the plan's desired state: give prio=P"
        )
    try:
        p = int(prio)
    except ValueError:
        p = -1
    if not 0 <= p <= 7:
        raise ValueError(f"{KIND}: prio must be a priority 0..7, not {prio!r}")
    return p


def rising(st: dict[str, Any], nic: dict[str, Any], now: float) -> dict[str, int]:
    """The increments the active fault adds to ``nic``'s counters at ``now`` (empty when not faulted)."""
    params = S.fault(st, KIND)
    if params is None or nic["rail"] not in _rails(st):
        return {}
    prio = (params.get("prios") or {}).get(str(nic["rail"]))
    if prio is None:
        return {}
    n = int(rate(params) * max(0.0, now - float(params.get("since", now))))
    return dict.fromkeys(counters(int(prio)), n)


def _keep(st: dict[str, Any], params: dict[str, Any], now: float) -> None:
    """Fold what the storm added so far into each faulted NIC's kept counters."""
    for n in st["nics"]:
        prio = (params.get("prios") or {}).get(str(n["rail"]))
        if prio is None:
            continue
        grown = int(rate(params) * max(0.0, now - float(params.get("since", now))))
        kept = n.setdefault(KEPT, {})
        for name in counters(int(prio)):
            kept[name] = int(kept.get(name, 0)) + grown


def on_set(st: dict[str, Any], params: dict[str, Any], previous: dict[str, Any] | None) -> None:
    """Check the rails (RoCE only) and start the growth now; a re-set keeps what the last one added."""
    rate(params)
    now = _now()
    prios = {}
    for n in st["nics"]:
        if n["rail"] not in _rails(st):
            continue
        if S.link_layer(n) != "Ethernet":
            raise ValueError(f"{KIND}: rail {n['rail']} is InfiniBand (no PFC): pick a RoCE rail")
        prios[str(n["rail"])] = _prio(n, params)
    if previous is not None:
        _keep(st, previous, now)
    params["prios"], params["since"] = prios, now


def on_clear(st: dict[str, Any], params: dict[str, Any]) -> None:
    """The storm ends: the counters stop rising and keep their values."""
    _keep(st, params, _now())
