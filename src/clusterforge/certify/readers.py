"""Small readers for host files and tool outputs that have no parser in ``clusterforge.hw``.

Same contract as the hw parsers: anything unrecognised raises :class:`clusterforge.hw.ParseError`
(the check helper turns that into verdict ``error``), never a default.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from clusterforge.hw import ParseError
from clusterforge.hw._common import parse_cpulist


def cpulist(text: str) -> list[int]:
    """``0-3,8,10-11`` → [0, 1, 2, 3, 8, 10, 11] (the hw parsers' rule); a ParseError for anything else."""
    try:
        return list(parse_cpulist(text))
    except ValueError as exc:
        raise ParseError("cpulist", str(exc)) from None


_CPU_STATE = re.compile(r"(?:^|/)cpu(?P<cpu>\d+)/cpuidle/state(?P<state>\d+)/(?P<attr>\w+)$")
_CPU_FREQ = re.compile(r"(?:^|/)cpu(?P<cpu>\d+)/cpufreq/(?P<attr>\w+)$")


@dataclass(frozen=True)
class IdleState:
    index: int
    name: str
    disabled: bool
    latency_us: int | None


def cpuidle(values: Mapping[str, str]) -> dict[int, dict[int, IdleState]]:
    """``grep -H`` of ``cpu*/cpuidle/state*/{name,disable,latency}`` → cpu → state index → state."""
    raw: dict[int, dict[int, dict[str, str]]] = {}
    for path, value in values.items():
        m = _CPU_STATE.search(path)
        if not m:
            raise ParseError("cpuidle", f"unexpected path {path!r}")
        raw.setdefault(int(m["cpu"]), {}).setdefault(int(m["state"]), {})[m["attr"]] = value
    out: dict[int, dict[int, IdleState]] = {}
    for cpu, states in raw.items():
        for idx, attrs in states.items():
            if "disable" not in attrs or attrs["disable"] not in ("0", "1"):
                raise ParseError("cpuidle", f"cpu{cpu} state{idx}: disable flag missing or odd: {attrs}")
            lat = attrs.get("latency")
            out.setdefault(cpu, {})[idx] = IdleState(
                idx,
                attrs.get("name", f"state{idx}"),
                attrs["disable"] == "1",
                int(lat) if lat and lat.isdigit() else None,
            )
    return out


def per_cpu(values: Mapping[str, str], attr: str) -> dict[int, str]:
    """``grep -H`` of ``cpu*/cpufreq/<attr>`` → cpu → value."""
    out: dict[int, str] = {}
    for path, value in values.items():
        m = _CPU_FREQ.search(path)
        if not m or m["attr"] != attr:
            raise ParseError("cpufreq", f"unexpected path {path!r}")
        out[int(m["cpu"])] = value
    return out


def bracketed(text: str) -> str:
    """The active choice of a sysfs selector: ``always [madvise] never`` → ``madvise``."""
    m = re.search(r"\[([^\]]+)\]", text)
    if not m:
        raise ParseError("sysfs selector", f"no [active] value in {text.strip()!r}")
    return m.group(1)


def cmdline(text: str) -> dict[str, list[str]]:
    """/proc/cmdline → parameter → every value given (flags map to [""]), in order."""
    text = text.strip()
    if not text:
        raise ParseError("/proc/cmdline", "empty")
    out: dict[str, list[str]] = {}
    for tok in shlex.split(text):
        key, _, value = tok.partition("=")
        out.setdefault(key, []).append(value)
    return out


def kv_lines(text: str, tool: str, sep: str = "=") -> dict[str, str]:
    """``KEY=value`` lines (comments and blanks ignored; quotes around the value removed)."""
    out: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, found, value = line.partition(sep)
        if not found or not key.strip():
            raise ParseError(tool, f"expected KEY{sep}value", line_no=no, line=raw)
        out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def systemctl_show(text: str) -> dict[str, str]:
    return kv_lines(text, "systemctl show")


UNIT_PROPS = "LoadState,UnitFileState,ActiveState,ConditionResult,ConditionTimestampMonotonic"


def unit_skipped(show: dict[str, str]) -> bool:
    """The unit's own start conditions were false at its last start (``ConditionVirtualization=!container``
    and the like): systemd skipped it; it is not failed."""
    return show.get("ConditionResult") == "no" and show.get("ConditionTimestampMonotonic", "0") != "0"


@dataclass(frozen=True)
class Limit:
    domain: str
    type: str  # soft | hard | -
    item: str
    value: str
    source: str


def limits(text: str, source: str) -> list[Limit]:
    """pam_limits files (``limits.conf`` syntax); several files may be concatenated with ``==> f <==``."""
    out: list[Limit] = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^==> (.+) <==$", line)
        if m:
            source = m.group(1)
            continue
        parts = line.split()
        if len(parts) != 4:
            raise ParseError("limits.conf", "expected '<domain> <type> <item> <value>'", line_no=no, line=raw)
        out.append(Limit(parts[0], parts[1], parts[2], parts[3], source))
    return out


def memlock_for_users(entries: list[Limit]) -> dict[str, str]:
    """Effective memlock soft/hard for ordinary users (the ``*`` domain; later files/lines win)."""
    eff: dict[str, str] = {}
    for e in entries:
        if e.item != "memlock" or e.domain != "*":
            continue
        for t in ("soft", "hard") if e.type == "-" else (e.type,):
            eff[t] = e.value
    return eff


def dpkg_list(text: str) -> dict[str, str]:
    """``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` → installed → version."""
    out: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        parts = raw.split("\t")
        if len(parts) != 3:
            raise ParseError("dpkg-query", "expected package<TAB>version<TAB>status", line_no=no, line=raw)
        pkg, version, status = (p.strip() for p in parts)
        if status[1:2] == "i":  # current state installed, whatever the selection (held packages are "hi")
            out[pkg.split(":")[0]] = version
    if not out:
        raise ParseError("dpkg-query", "no installed packages listed")
    return out


def upstream_version(version: str) -> str:
    """Debian version → upstream part: ``1:4.2.3-1`` → ``4.2.3``; ``2.26.2-1+cuda12.8`` → ``2.26.2``."""
    v = version.split(":", 1)[1] if ":" in version else version
    return v.rsplit("-", 1)[0] if "-" in v else v


@dataclass(frozen=True)
class Tracking:
    reference: str
    leap: str
    offset_s: float  # signed: positive = system clock fast
    stratum: int


def chrony_tracking(text: str) -> Tracking:
    kv = kv_lines(text, "chronyc tracking", sep=":")
    try:
        m = re.match(r"^([\d.]+) seconds (fast|slow) of NTP time$", kv["System time"])
        if not m:
            raise ParseError("chronyc tracking", f"System time not understood: {kv['System time']!r}")
        offset = float(m.group(1)) * (1 if m.group(2) == "fast" else -1)
        return Tracking(kv["Reference ID"], kv["Leap status"], offset, int(kv["Stratum"]))
    except KeyError as exc:
        raise ParseError("chronyc tracking", f"missing field {exc}") from None


def chrony_sources(text: str) -> dict[str, str]:
    """``chronyc -n sources`` → source address → state char (``*`` selected, ``+`` combined, ``?`` ...)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^([\^=#])([*+\-?x~ ])\s+(\S+)\s+\d+", line)
        if m:
            out[m.group(3)] = m.group(2)
    if not out and "MS Name/IP address" not in text:
        raise ParseError("chronyc sources", "no source table")
    return out
