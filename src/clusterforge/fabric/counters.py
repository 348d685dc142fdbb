"""Counters judged as rates: two readings of the same ports over a window -> increments per second,
compared with limits (`Limit`s: the node's compiled desired state, `clusterforge.spec.counter_policy`).

Readings are plain mappings ``port -> {counter: value}`` built from the hw parsers (perfquery names are
mapped to the sysfs names the policy uses). A counter that went backwards (reset or wrap), or that is
missing from one reading, is an `error`, never a pass. The policy itself, its merge with a site's
overrides and the reading of the compiled limits live in the spec layer (`spec/counter_policy.py`, below
the plan that compiles them); they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusterforge.spec.counter_policy import (
    DEFAULT_WINDOW_S,
    Limit,
    compiled,
    default_policy,
    from_desired,
    limits,
    policy_limits,
    window_s,
)

__all__ = [
    "DEFAULT_WINDOW_S",
    "PERFQUERY_NAMES",
    "CounterVerdict",
    "Limit",
    "Reading",
    "compiled",
    "default_policy",
    "from_desired",
    "from_perfquery",
    "judge",
    "limits",
    "policy_limits",
    "window_s",
]

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
class CounterVerdict:
    port: str
    counter: str
    delta: int | None
    per_s: float | None
    limit: float | None
    verdict: str  # pass | fail | error | info (measured, no limit)
    note: str


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
