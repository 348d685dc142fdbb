"""Rail link health as RATES: each rail's link-health counters read twice a window apart and judged by
`clusterforge.fabric.counters` against the limits and window of the node's desired state (plan.json
`desired.link_counters`: the counter policy merged with the spec's `certification.link_counters`, compiled
once by the plan), per-priority names at the rail's lossless priority (the rail's desired `qos`). A plan.json
without that section (compiled before it existed) is an error naming the fix: re-run `clusterforge plan`.

A counter that rose faster than its limit fails the rail (a cable, optic or switch port taking errors now,
or a PFC storm / loss on the lossless priority, which an absolute count since boot cannot tell from old
history); a counter that went backwards, is missing or unreadable is an error; counters without a limit
(congestion notifications) are recorded as notes. One node-wide sample serves every rail: each reading is
two batched sysfs reads (`grep -H` of every port's counter directory) and, on RoCE, ONE `ethtool -S` of
every rail netdev (the netdevs from the plan), so a node costs one window, not one per rail. Read from
sysfs: the InfiniBand port counters (`counters/`) and the RoCE RDMA `hw_counters/`; from `ethtool -S`
(mlx5 names, parsed by `clusterforge.hw.nic_counters`): the policy's RoCE discards, pause-storm and
per-priority pause counters. ethtool missing is an error naming the role that installs it (os_tuning).
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Probe, ToolMissing
from clusterforge.fabric import counters
from clusterforge.hw import ParseError, nic_counters
from clusterforge.plan.expect import NodeExpect, Rail
from clusterforge.remote.commands import ETHTOOL_END, ethtool_stats_cmd
from clusterforge.remote.tools import TOOLS

pytestmark = pytest.mark.full

SYSFS = "/sys/class/infiniband"
#: the policy's `read` values this check reads -> the glob of every port's directory under SYSFS
PATTERNS = {"counters": "*/ports/*/counters/*", "hw_counters": "*/ports/*/hw_counters/*"}
SYSFS_DIRS = tuple(PATTERNS)
ETHTOOL = "ethtool"  # the policy's `read` of the counters `ethtool -S <netdev>` shows
READ = (*SYSFS_DIRS, ETHTOOL)
RC_NOT_FOUND = 127
FIX = (
    "reseat or replace the rail's cable or optic (transceiver), and check the switch port at its far end "
    "(its error counters and transceiver); then re-certify"
)
FIX_PFC = (
    "find what floods the rail with PFC pause frames or makes it drop on the lossless path: the switch "
    "port at its far end (its pause/PFC and discard counters, a stuck or congested egress) and both ends' "
    "lossless QoS (PFC on the lossless priority, buffers; this node: `clusterforge provision --tags "
    "roce_qos`); then re-certify"
)

# the clock and the wait (replaced in unit tests)
_clock = time.monotonic
_sleep = time.sleep


class Sample:
    """Two readings of every port's counters: ``hca/port -> {counter: value}``, and the seconds between.
    ``eth_errors``: port -> why its `ethtool -S` gave no counters; ``eth_missing``: ethtool not installed."""

    def __init__(
        self,
        first: dict[str, dict[str, int]],
        second: dict[str, dict[str, int]],
        seconds: float,
        unreadable: dict[str, list[str]] | None = None,  # hca/port -> counters whose value is no integer
        error: CheckError | None = None,
        eth_errors: dict[str, str] | None = None,
        eth_missing: str = "",
    ) -> None:
        self.first, self.second, self.seconds = first, second, seconds
        self.unreadable = unreadable or {}
        self.error = error
        self.eth_errors = eth_errors or {}
        self.eth_missing = eth_missing


_SAMPLES: weakref.WeakKeyDictionary[Probe, Sample] = weakref.WeakKeyDictionary()


def _dirs(lim: dict[str, counters.Limit]) -> list[str]:
    return sorted({v.read for v in lim.values() if v.read in SYSFS_DIRS})


def ethtool_ports(node: NodeExpect, lim: dict[str, counters.Limit]) -> dict[str, str]:
    """RoCE rail netdev -> its ``hca/port`` (plan order), when the policy names `ethtool` counters."""
    if not node.roce or not any(v.read == ETHTOOL for v in lim.values()):
        return {}
    return {r.netdev: f"{r.hca}/{r.port}" for r in node.rails}


def split_ethtool(out: str, count: int) -> list[tuple[int, str]]:
    """(exit code, output) per netdev of :func:`ethtool_stats_cmd`'s output, in its order."""
    parts: list[tuple[int, str]] = []
    text: list[str] = []
    for line in out.splitlines(keepends=True):
        if line.startswith(ETHTOOL_END) and line[len(ETHTOOL_END) :].strip().isdigit():
            parts.append((int(line[len(ETHTOOL_END) :]), "".join(text)))
            text = []
        else:
            text.append(line)
    if len(parts) != count:
        raise CheckError(f"`ethtool -S` of {count} rail netdevs: {len(parts)} results came back")
    return parts


def _read_ethtool(
    probe: Probe, ports: dict[str, str], out: dict[str, dict[str, int]], errors: dict[str, str]
) -> str:
    """One `ethtool -S` of every rail netdev (one round trip) into ``out``; returns the "missing" message
    when ethtool is not installed."""
    cmd = ethtool_stats_cmd(list(ports))
    for (netdev, port), (rc, text) in zip(
        ports.items(), split_ethtool(probe.run(cmd, cache=False), len(ports)), strict=True
    ):
        if rc == RC_NOT_FOUND:
            last = (text.strip().splitlines() or [""])[-1][:200]
            return f"`ethtool` exit 127: {last}"
        if rc != 0:
            errors.setdefault(port, f"`ethtool -S {netdev}` exited {rc}: {text.strip()[-200:]}")
            continue
        try:
            stats = nic_counters.parse_ethtool_stats(text)
        except ParseError as exc:
            errors.setdefault(port, f"`ethtool -S {netdev}` output not recognised: {exc}")
            continue
        out.setdefault(port, {}).update(stats.counters)
    return ""


def _read(
    probe: Probe, dirs: list[str], ports: dict[str, str], bad: dict[str, list[str]], eth: dict[str, str]
) -> tuple[dict[str, dict[str, int]], float, str]:
    """One reading (one batched read per sysfs directory, one `ethtool -S` of the ``ports`` netdevs) and
    the middle of its time span; the "ethtool missing" message, if so."""
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
    missing = _read_ethtool(probe, ports, out, eth) if ports else ""
    return out, (start + _clock()) / 2, missing


def sample(probe: Probe, dirs: list[str], window: float, ports: dict[str, str] | None = None) -> Sample:
    """The node's two readings, taken once per node (the first rail's check) and shared by every rail;
    ``ports``: the netdevs whose `ethtool -S` is read too (netdev -> hca/port)."""
    got = _SAMPLES.get(probe)
    if got is None:
        bad: dict[str, list[str]] = {}
        eth: dict[str, str] = {}
        try:
            first, t1, missing = _read(probe, dirs, ports or {}, bad, eth)
            if not first and not bad:  # no port shows any counter (no HCA the kernel sees): no 2nd read
                got = Sample(first, {}, 0.0, bad, eth_errors=eth, eth_missing=missing)
            else:
                if missing:  # no second `ethtool -S`: its counters cannot be judged anyway
                    ports = {}
                _sleep(window)
                second, t2, _ = _read(probe, dirs, ports or {}, bad, eth)
                got = Sample(first, second, t2 - t1, bad, eth_errors=eth, eth_missing=missing)
        except CheckError as exc:
            got = Sample({}, {}, 0.0, error=exc)
        _SAMPLES[probe] = got
    if got.error is not None:
        raise got.error  # the same error for every rail (Unreachable stays Unreachable)
    return got


REPLAN = "re-run `clusterforge plan` (it compiles the limits into each node's desired state), then certify"


def desired_counters(node: NodeExpect) -> dict[str, Any]:
    """The node's compiled link-counter limits and window (plan.json `desired.link_counters`); an error
    naming the fix when the plan predates them."""
    try:
        section = node.desired.get("link_counters")
    except KeyError as exc:
        raise CheckError(str(exc.args[0]) if exc.args else str(exc)) from None  # no desired state at all
    if (
        not isinstance(section, dict)
        or not isinstance(section.get("limits"), dict)
        or "window_s" not in section
    ):
        raise CheckError(
            f"plan.json has no link-counter limits in {node.name}'s desired state (`desired.link_counters`, "
            f"a plan compiled before they were): {REPLAN}"
        )
    return section


def window(node: NodeExpect) -> float:
    """Seconds between the two readings: the node's desired `link_counters.window_s`."""
    value = desired_counters(node)["window_s"]
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 0.0
    if not seconds > 0:
        raise CheckError(
            f"plan.json link_counters.window_s of {node.name} is {value!r}, not a positive number"
        )
    return seconds


def rail_limits(node: NodeExpect, rail: int) -> dict[str, counters.Limit]:
    """The node's compiled limits (plan.json desired state); RoCE names at the rail's lossless priority."""
    section = desired_counters(node)
    prio = 3
    if node.roce:
        prio = int(node.rail_desired(rail)["qos"]["lossless_priority"])
    try:
        return counters.from_desired(section, prio)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckError(
            f"plan.json link_counters of {node.name} not understood ({exc!r}): {REPLAN}"
        ) from None


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


def _fix(fails: list[counters.CounterVerdict], lim: dict[str, counters.Limit]) -> str:
    """The cable fix for the port's error counters, the lossless-path fix for `ethtool -S` pause/discards."""
    eth = [v for v in fails if lim[v.counter].read == ETHTOOL]
    parts = [FIX] if len(eth) < len(fails) else []
    return "; ".join([*parts, FIX_PFC] if eth else parts)


def _absent_note(name: str, lim: dict[str, counters.Limit], where: str, netdev: str) -> str:
    if lim[name].read != ETHTOOL:
        return f"{name} missing from {where}"
    why = " (mlx5 shows a priority's pause counters only while PFC is on for it)" if "_pause" in name else ""
    return f"{name} missing from `ethtool -S {netdev}`{why}"


def test_rates(node: NodeExpect, probe: Probe, rail: int) -> None:
    """No link-health counter of the rail's port rises faster than its limit over the window."""
    r = node.rail(rail)
    lim = rail_limits(node, rail)
    judged = {k: v for k, v in lim.items() if v.read in READ}
    not_read = sorted(k for k, v in lim.items() if v.read not in READ)
    if not any(v.read in SYSFS_DIRS for v in judged.values()):
        raise CheckError(f"the counter policy names no sysfs counter for {node.fabric_type}")
    ports = ethtool_ports(node, lim)
    s = sample(probe, _dirs(lim), window(node), ports)
    port = f"{r.hca}/{r.port}"
    where = f"{SYSFS}/{r.hca}/ports/{r.port}"
    eth_judged = sorted(k for k, v in judged.items() if v.read == ETHTOOL)
    eth_error = ""  # why this rail's ethtool counters were not read ("" = read, or none asked)
    if port in ports.values():
        eth_error = s.eth_missing or s.eth_errors.get(port, "")
    if port not in s.first and port not in s.second:
        raise CheckError(f"rail {rail}: no counters readable in {where}/{{{','.join(_dirs(lim))}}}")
    unreadable = sorted(set(s.unreadable.get(port, [])) & set(judged))
    absent = sorted(
        k
        for k in judged
        if k not in s.first.get(port, {})
        and k not in s.second.get(port, {})
        and k not in unreadable
        and not (eth_error and k in eth_judged)
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
        probe.note("not_read", {"counters": not_read, "why": "the policy names no source this check reads"})
    errors = [
        f"{v.counter} {v.note}" for v in verdicts if v.verdict == "error" and v.counter not in unreadable
    ]
    errors += [f"{k} unreadable (not an integer)" for k in unreadable]
    errors += [_absent_note(k, lim, where, r.netdev) for k in absent]
    if eth_error and eth_judged:
        why = f"ethtool not installed ({TOOLS[ETHTOOL].install})" if s.eth_missing else eth_error
        errors.append(f"{', '.join(eth_judged)} not read: {why}")
    fails = [v for v in verdicts if v.verdict == "fail"]
    if fails:
        found = "; ".join(_fmt(v, judged, s.seconds) for v in fails)
        if errors:
            found += "; also not judged: " + ", ".join(errors)
        raise CheckFailed(
            f"rail {rail} {r.hca} port {r.port} link counters over {s.seconds:.1f} s",
            "no counter rising faster than its limit",
            found,
            _fix(fails, lim) + _far_end(node, r),
        )
    if errors:
        if s.eth_missing and eth_judged:
            detail = f"{s.eth_missing}; rail {rail}: cannot judge " + "; ".join(errors)
            raise ToolMissing(TOOLS[ETHTOOL], probe.node, detail=detail)
        raise CheckError(f"rail {rail} {r.hca} port {r.port}: cannot judge " + "; ".join(errors))
