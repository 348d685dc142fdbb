"""Counters judged as rates: two readings of the same ports over a window -> increments per second,
compared with the policy's limits (counter_policy.yaml; per fabric type, per SKU, overridable).

Readings are plain mappings ``port -> {counter: value}`` built from the hw parsers (perfquery names are
mapped to the sysfs names the policy uses). A counter that went backwards (reset or wrap), or that is
missing from one reading, is an `error`, never a pass. Names with ``{prio}`` are the lossless priority's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

#: perfquery / ibqueryerrors names -> the sysfs names (/sys/class/infiniband/*/ports/*/counters/)
PERFQUERY_NAMES = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
}

Reading = Mapping[str, Mapping[str, int]]  # port -> counter -> value


@dataclass(frozen=True)
class Limit:
    max_per_s: float | None
    source: str
    read: str = ""  # where a node shows it: "counters" / "hw_counters" (the port's sysfs dirs), "ethtool"


@dataclass(frozen=True)
class CounterVerdict:
    port: str
    counter: str
    delta: int | None
    per_s: float | None
    limit: float | None
    verdict: str  # pass | fail | error | info (measured, no limit)
    note: str


def default_policy() -> dict[str, Any]:
    text = resources.files("clusterforge.fabric").joinpath("counter_policy.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def limits(
    fabric_type: str,
    sku: str = "",
    overrides: Mapping[str, float | None] | None = None,
    *,
    lossless_prio: int = 3,
    policy: Mapping[str, Any] | None = None,
) -> dict[str, Limit]:
    doc = policy if policy is not None else default_policy()
    merged: dict[str, Any] = dict(doc.get(fabric_type) or {})
    merged.update((doc.get("skus") or {}).get(sku, {}).get(fabric_type, {}) if sku else {})
    out = {
        name.format(prio=lossless_prio): Limit(
            v.get("max_per_s"), str(v.get("source", "")), str(v.get("read", ""))
        )
        for name, v in merged.items()
        if isinstance(v, dict)
    }
    for name, value in (overrides or {}).items():
        key = name.format(prio=lossless_prio)
        out[key] = Limit(value, "override", out[key].read if key in out else "")
    return out


DEFAULT_WINDOW_S = 5.0


def window_s(sku: str = "", policy: Mapping[str, Any] | None = None) -> float:
    """Seconds between the two readings: the SKU's `window_s` in the policy, else the policy's, else 5."""
    doc = policy if policy is not None else default_policy()
    sku_entry = (doc.get("skus") or {}).get(sku) or {}
    value = sku_entry.get("window_s", doc.get("window_s", DEFAULT_WINDOW_S))
    seconds = float(value)
    if seconds <= 0:
        raise ValueError(f"counter policy window_s must be positive; got {value!r}")
    return seconds


def from_perfquery(counters: Mapping[str, int]) -> dict[str, int]:
    return {PERFQUERY_NAMES.get(k, k): v for k, v in counters.items()}


def judge(first: Reading, second: Reading, seconds: float, lim: Mapping[str, Limit]) -> list[CounterVerdict]:
    """Every policy counter of every port in `first`, judged on its rate between the two readings."""
    if seconds <= 0:
        raise ValueError("the sampling window must be positive")
    out: list[CounterVerdict] = []
    for port in sorted(first):
        a, b = first[port], second.get(port)
        for name in sorted(lim):
            limit = lim[name].max_per_s
            if name not in a and (b is None or name not in b):
                continue  # this device does not have the counter
            if b is None or name not in a or name not in b:
                out.append(CounterVerdict(port, name, None, None, limit, "error", "missing from one reading"))
                continue
            delta = b[name] - a[name]
            if delta < 0:
                out.append(
                    CounterVerdict(
                        port, name, delta, None, limit, "error", "went backwards (reset or wrapped)"
                    )
                )
                continue
            rate = delta / seconds
            if limit is None:
                verdict, note = "info", "no limit set"
            elif rate > limit:
                verdict, note = "fail", f"{rate:.3g}/s over {seconds:g} s > {limit:g}/s ({lim[name].source})"
            else:
                verdict, note = "pass", ""
            out.append(CounterVerdict(port, name, delta, rate, limit, verdict, note))
    return out
