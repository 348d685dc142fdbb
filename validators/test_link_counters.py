"""Rail link health as RATES: each rail's link-health counters read twice a window apart and judged by
`clusterforge.fabric.counters` (counter_policy.yaml: limits per fabric type and SKU, the window) with the
node's fabric type, SKU and, on RoCE, the rail's lossless priority from the plan's desired state.

A counter that rose faster than its limit fails the rail (a cable, optic or switch port taking errors now,
which an absolute count since boot cannot tell from old history); a counter that went backwards, is
missing or unreadable is an error; counters without a limit (congestion notifications) are recorded as
notes. One node-wide sample serves every rail: two batched sysfs reads (`grep -H` of every port's
counter directory), so a node costs one window, not one per rail. Read from sysfs: the InfiniBand port
counters (`counters/`) and the RoCE RDMA `hw_counters/`; the policy's `ethtool -S` counters (pause and
discards per priority) are not read by this check and are named in its notes.
"""

from __future__ import annotations

import time
import weakref

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Probe
from clusterforge.fabric import counters
from clusterforge.plan.expect import NodeExpect, Rail

pytestmark = pytest.mark.full

SYSFS = "/sys/class/infiniband"
#: the policy's `read` values this check reads -> the glob of every port's directory under SYSFS
PATTERNS = {"counters": "*/ports/*/counters/*", "hw_counters": "*/ports/*/hw_counters/*"}
SYSFS_DIRS = tuple(PATTERNS)
FIX = (
    "reseat or replace the rail's cable or optic (transceiver), and check the switch port at its far end "
    "(its error counters and transceiver); then re-certify"
)

# the clock and the wait (replaced in unit tests)
_clock = time.monotonic
_sleep = time.sleep


class Sample:
    """Two readings of every port's counters: ``hca/port -> {counter: value}``, and the seconds between."""

    def __init__(
        self,
        first: dict[str, dict[str, int]],
        second: dict[str, dict[str, int]],
        seconds: float,
        unreadable: dict[str, list[str]] | None = None,  # hca/port -> counters whose value is no integer
        error: CheckError | None = None,
    ) -> None:
        self.first, self.second, self.seconds = first, second, seconds
        self.unreadable = unreadable or {}
        self.error = error


_SAMPLES: weakref.WeakKeyDictionary[Probe, Sample] = weakref.WeakKeyDictionary()


def _dirs(lim: dict[str, counters.Limit]) -> list[str]:
    return sorted({v.read for v in lim.values() if v.read in SYSFS_DIRS})


def _read(
    probe: Probe, dirs: list[str], bad: dict[str, list[str]]
) -> tuple[dict[str, dict[str, int]], float]:
    """One reading (one batched read per sysfs directory) and the middle of its time span."""
    start = _clock()
    out: dict[str, dict[str, int]] = {}
    for d in dirs:
        values = probe.read_many(SYSFS, PATTERNS[d], cache=False)
        for path, value in values.items():
            parts = path.removeprefix(SYSFS + "/").split("/")
            if len(parts) != 5 or parts[1] != "ports":
                raise CheckError(f"unexpected path reading {SYSFS}/{PATTERNS[d]}: {path!r}")
            port = f"{parts[0]}/{parts[2]}"
            if value.isdigit():
                out.setdefault(port, {})[parts[4]] = int(value)
            else:
                bad.setdefault(port, []).append(parts[4])
    return out, (start + _clock()) / 2


def sample(probe: Probe, dirs: list[str], window: float) -> Sample:
    """The node's two readings, taken once per node (the first rail's check) and shared by every rail."""
    got = _SAMPLES.get(probe)
    if got is None:
        bad: dict[str, list[str]] = {}
        try:
            first, t1 = _read(probe, dirs, bad)
            _sleep(window)
            second, t2 = _read(probe, dirs, bad)
            got = Sample(first, second, t2 - t1, bad)
        except CheckError as exc:
            got = Sample({}, {}, 0.0, error=exc)
        _SAMPLES[probe] = got
    if got.error is not None:
        raise got.error  # the same error for every rail (Unreachable stays Unreachable)
    return got


def rail_limits(node: NodeExpect, rail: int) -> dict[str, counters.Limit]:
    """The policy's limits for this node's fabric type and SKU; RoCE names at the rail's lossless priority
    (plan.json desired state)."""
    prio = 3
    if node.roce:
        prio = int(node.rail_desired(rail)["qos"]["lossless_priority"])
    return counters.limits(node.fabric_type, node.sku_name, lossless_prio=prio)


def _far_end(node: NodeExpect, r: Rail) -> str:
    """` (far end: leaf port)` where the plan cables the rail, else nothing."""
    try:
        wire = next(w for w in node.rail_neighbours if int(w["rail"]) == r.index)
    except (KeyError, ValueError, StopIteration):
        return ""
    return f" (far end: {wire['switch']} port {wire['switch_port']})"


def _fmt(v: counters.CounterVerdict, lim: dict[str, counters.Limit], seconds: float) -> str:
    return (
        f"{v.counter} +{v.delta} in {seconds:.1f} s = {v.per_s:.3g}/s > limit {v.limit:g}/s "
        f"({lim[v.counter].source})"
    )


def test_rates(node: NodeExpect, probe: Probe, rail: int) -> None:
    """No link-health counter of the rail's port rises faster than its limit over the window."""
    r = node.rail(rail)
    lim = rail_limits(node, rail)
    judged = {k: v for k, v in lim.items() if v.read in SYSFS_DIRS}
    not_read = sorted(k for k, v in lim.items() if v.read not in SYSFS_DIRS)
    if not judged:
        raise CheckError(f"the counter policy names no sysfs counter for {node.fabric_type}")
    s = sample(probe, _dirs(lim), counters.window_s(node.sku_name))
    port = f"{r.hca}/{r.port}"
    where = f"{SYSFS}/{r.hca}/ports/{r.port}"
    if port not in s.first and port not in s.second:
        raise CheckError(f"rail {rail}: no counters readable in {where}/{{{','.join(_dirs(lim))}}}")
    unreadable = sorted(set(s.unreadable.get(port, [])) & set(judged))
    absent = sorted(
        k
        for k in judged
        if k not in s.first.get(port, {}) and k not in s.second.get(port, {}) and k not in unreadable
    )
    verdicts = counters.judge({port: s.first.get(port, {})}, s.second, s.seconds, judged)
    probe.note("window_s", round(s.seconds, 3))
    probe.note(
        "counters",
        {
            v.counter: {"delta": v.delta, "per_s": v.per_s, "limit": v.limit, "verdict": v.verdict}
            for v in verdicts
        },
    )
    reported = {v.counter: round(v.per_s or 0.0, 3) for v in verdicts if v.verdict == "info"}
    if reported:
        probe.note("reported_per_s", reported)  # no limit set: measured, not judged
    if not_read:
        probe.note("not_read", {"counters": not_read, "why": "shown by ethtool -S, not read by this check"})
    errors = [
        f"{v.counter} {v.note}" for v in verdicts if v.verdict == "error" and v.counter not in unreadable
    ]
    errors += [f"{k} unreadable (not an integer)" for k in unreadable]
    errors += [f"{k} missing from {where}" for k in absent]
    fails = [v for v in verdicts if v.verdict == "fail"]
    if fails:
        found = "; ".join(_fmt(v, judged, s.seconds) for v in fails)
        if errors:
            found += "; also not judged: " + ", ".join(errors)
        raise CheckFailed(
            f"rail {rail} {r.hca} port {r.port} link counters over {s.seconds:.1f} s",
            "no counter rising faster than its limit",
            found,
            FIX + _far_end(node, r),
        )
    if errors:
        raise CheckError(f"rail {rail} {r.hca} port {r.port}: cannot judge " + "; ".join(errors))
