"""The ``link-errors`` fault: a rail's link error counter rises with time while the fault is active
(InfiniBand: the port's ``counters/symbol_error``; RoCE: its ``hw_counters/out_of_sequence``).

The simulated sysfs is plain files in the node's tmpfs overlay, written at boot and refreshed by the sim
daemon (:func:`clusterforge.lab.sim.daemons.kerneld`), so a rising counter is computed from the clock:
``base + rate x (now - since)``, with ``since`` (wall-clock seconds) and ``base`` (the counter's value
when the fault was set, per rail) kept with the fault in state.json. kerneld rewrites the file every tick
(0.2 s) while the fault is active, holding the state lock, so two reads seconds apart differ as they do on
a port taking errors, and a clear is never undone by a stale copy. Clearing the fault stands for the
repair (cable replaced, the port's counters reset as `perfquery -R` does): the counter goes back to
``base`` and stays there.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from . import paths
from . import state as S

KIND = "link-errors"
COUNTER = {"InfiniBand": "counters/symbol_error", "Ethernet": "hw_counters/out_of_sequence"}
DEFAULT_RATE = 5.0  # increments per second


def _now() -> float:
    return time.time()


def counter_file(nic: dict[str, Any]) -> Path:
    return paths.p(f"/sys/class/infiniband/{nic['hca']}/ports/1/{COUNTER[S.link_layer(nic)]}")


def _read(nic: dict[str, Any]) -> int:
    try:
        return int(counter_file(nic).read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _write(nic: dict[str, Any], value: int) -> None:
    f = counter_file(nic)
    if f.parent.is_dir():  # the HCA's view exists (rendered at boot)
        paths.replace_text(f, f"{value}\n")  # rewritten every tick: a reader never sees it empty


def rate(params: dict[str, Any]) -> float:
    value = float(params.get("rate", DEFAULT_RATE))
    if value <= 0:
        raise ValueError(f"{KIND}: rate must be a positive number of errors per second, not {value:g}")
    return value


def value(params: dict[str, Any], rail: int, now: float) -> int:
    """The counter of a faulted rail at ``now``."""
    base = int((params.get("base") or {}).get(str(rail), 0))
    return base + int(rate(params) * max(0.0, now - float(params.get("since", now))))


def _rails(st: dict[str, Any]) -> set[int]:
    return S.targets(st, KIND, "rail", len(st["nics"]))


def on_set(st: dict[str, Any], params: dict[str, Any], previous: dict[str, Any] | None) -> None:
    """Start the growth now from each faulted rail's current value (a re-set keeps the original base)."""
    rate(params)
    params["since"] = _now()
    kept = (previous or {}).get("base") or {}
    params["base"] = {
        str(n["rail"]): int(kept.get(str(n["rail"]), _read(n))) for n in st["nics"] if n["rail"] in _rails(st)
    }


def refresh(st: dict[str, Any]) -> None:
    """Write each faulted rail's counter as of now (nothing while the fault is not active)."""
    params = S.fault(st, KIND)
    if params is None:
        return
    rails, now = _rails(st), _now()
    for n in st["nics"]:
        if n["rail"] in rails:
            _write(n, value(params, int(n["rail"]), now))


def on_clear(st: dict[str, Any], params: dict[str, Any]) -> None:
    """The repair: each rail's counter back to its value before the fault."""
    for n in st["nics"]:
        base = (params.get("base") or {}).get(str(n["rail"]))
        if base is not None:
            _write(n, int(base))
