"""``cpupower idle-info`` and ``cpupower [-c all] frequency-info`` output (linux-tools)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._common import require_text, split_lines
from .errors import ParseError

TOOL_IDLE = "cpupower idle-info"
TOOL_FREQ = "cpupower frequency-info"

_STATE_RE = re.compile(r"^(?P<name>[A-Z][A-Za-z0-9_\-]*)(?P<disabled> \(DISABLED\) )?:$")
_FREQ_RE = re.compile(r"^(?P<num>\d+(?:\.\d+)?) (?P<unit>[KMG]Hz)$")
_UNIT_KHZ = {"KHz": 1, "MHz": 1000, "GHz": 1_000_000}


@dataclass(frozen=True)
class IdleState:
    name: str  # "POLL", "C1", "C1E", "C6" ...
    disabled: bool  # printed as "C6 (DISABLED) :"
    description: str  # "Flags/Description" line
    latency_us: int
    residency_us: int | None  # only cpupower >= 6.12 prints Residency
    usage: int
    duration_us: int


@dataclass(frozen=True)
class CpuIdleInfo:
    driver: str  # "intel_idle", "acpi_idle", "none"
    governor: str
    cpu: int  # the CPU analysed
    states: tuple[IdleState, ...]

    def state(self, name: str) -> IdleState:
        for s in self.states:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def enabled_states(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.states if not s.disabled)

    @property
    def max_enabled_latency_us(self) -> int:
        return max((s.latency_us for s in self.states if not s.disabled), default=0)


def _int(tool: str, value: str, what: str, line_no: int) -> int:
    if not value.isdigit():
        raise ParseError(tool, f"{what} is not an integer: {value!r}", line_no=line_no)
    return int(value)


def parse_cpupower_idle_info(text: str) -> CpuIdleInfo:
    require_text(TOOL_IDLE, text)
    lines = [(n, line.strip()) for n, line in enumerate(split_lines(text), 1) if line.strip()]
    head: dict[str, str] = {}
    states: list[tuple[int, re.Match[str], dict[str, str]]] = []
    cpu: int | None = None
    no_states = False
    for line_no, line in lines:
        if m := re.match(r"^analyzing CPU (\d+):$", line):
            cpu = int(m.group(1))
        elif re.match(r"^CPU \d+: No idle states$", line):
            no_states = True
        elif (sm := _STATE_RE.match(line)) and cpu is not None:
            states.append((line_no, sm, {}))
        else:
            key, sep, value = line.partition(":")
            if not sep:
                raise ParseError(TOOL_IDLE, "unrecognised line", line_no=line_no, line=line)
            target = states[-1][2] if states else head
            allowed = (
                ("Flags/Description", "Latency", "Residency", "Usage", "Duration")
                if states
                else ("CPUidle driver", "CPUidle governor", "Number of idle states", "Available idle states")
            )
            if key not in allowed or key in target:
                raise ParseError(TOOL_IDLE, f"unexpected or repeated {key!r}", line_no=line_no, line=line)
            target[key] = value.strip()
    for key in ("CPUidle driver", "CPUidle governor"):
        if key not in head:
            raise ParseError(TOOL_IDLE, f"missing {key!r}")
    if cpu is None:
        raise ParseError(TOOL_IDLE, "missing 'analyzing CPU n:' - output truncated")
    if no_states:
        if states:
            raise ParseError(TOOL_IDLE, "'No idle states' together with state blocks")
        return CpuIdleInfo(head["CPUidle driver"], head["CPUidle governor"], cpu, ())
    if "Number of idle states" not in head or "Available idle states" not in head:
        raise ParseError(TOOL_IDLE, "missing idle-state summary - output truncated")
    names = head["Available idle states"].split()
    count = _int(TOOL_IDLE, head["Number of idle states"], "Number of idle states", 0)
    if len(names) != count or [m.group("name") for _, m, _ in states] != names:
        raise ParseError(
            TOOL_IDLE,
            f"expected {count} state blocks {names}, found "
            f"{[m.group('name') for _, m, _ in states]} - output truncated",
        )
    out = []
    for line_no, m, kv in states:
        missing = [k for k in ("Flags/Description", "Latency", "Usage", "Duration") if k not in kv]
        if missing:
            raise ParseError(
                TOOL_IDLE, f"state {m.group('name')} lacks {missing} - output truncated", line_no=line_no
            )
        out.append(
            IdleState(
                name=m.group("name"),
                disabled=bool(m.group("disabled")),
                description=kv["Flags/Description"],
                latency_us=_int(TOOL_IDLE, kv["Latency"], "Latency", line_no),
                residency_us=_int(TOOL_IDLE, kv["Residency"], "Residency", line_no)
                if "Residency" in kv
                else None,
                usage=_int(TOOL_IDLE, kv["Usage"], "Usage", line_no),
                duration_us=_int(TOOL_IDLE, kv["Duration"], "Duration", line_no),
            )
        )
    return CpuIdleInfo(head["CPUidle driver"], head["CPUidle governor"], cpu, tuple(out))


@dataclass(frozen=True)
class CpuFreqPolicy:
    cpu: int
    driver: str | None  # None: "no or unknown cpufreq driver is active on this CPU"
    related_cpus: tuple[int, ...]  # "CPUs which run at the same hardware frequency"
    affected_cpus: tuple[int, ...]  # "CPUs which need to have their frequency coordinated by software"
    max_transition_latency: str | None  # "20.0 us"; None when "Cannot determine or is not supported."
    hw_min_khz: int | None
    hw_max_khz: int | None
    available_governors: tuple[str, ...]
    available_frequencies_khz: tuple[int, ...]
    policy_min_khz: int | None
    policy_max_khz: int | None
    governor: str | None
    current_khz: int | None
    current_source: str | None  # "hardware" or "kernel" ("asserted by call to ...")
    boost_supported: bool | None
    boost_active: bool | None


def _khz(value: str, line_no: int) -> int:
    m = _FREQ_RE.match(value.strip())
    if not m:
        raise ParseError(TOOL_FREQ, f"not a frequency: {value!r}", line_no=line_no)
    return round(float(m.group("num")) * _UNIT_KHZ[m.group("unit")])


def _cpus(value: str) -> tuple[int, ...]:
    return tuple(int(v) for v in value.split()) if value != "Not Available" else ()


def _freq_block(cpu: int, lines: list[tuple[int, str]]) -> CpuFreqPolicy:
    kv: dict[str, tuple[int, str]] = {}
    governor: str | None = None
    current: list[tuple[int, str]] = []
    driver: str | None = None
    no_driver = False
    for line_no, line in lines:
        if line == "no or unknown cpufreq driver is active on this CPU":
            no_driver = True
        elif m := re.match(r'^The governor "(?P<g>[^"]+)" may decide which speed to use$', line):
            governor = m.group("g")
        elif line in ("within this range.", "boost state support:") or re.match(
            r"^\d+ MHz max turbo \d+ active", line
        ):
            continue
        else:
            key, sep, value = line.partition(":")
            if not sep:
                raise ParseError(TOOL_FREQ, "unrecognised line", line_no=line_no, line=line)
            if key == "current CPU frequency":
                current.append((line_no, value.strip()))
            elif key in kv:
                raise ParseError(TOOL_FREQ, f"{key!r} repeated for CPU {cpu}", line_no=line_no, line=line)
            else:
                kv[key] = (line_no, value.strip())
    if no_driver:
        return CpuFreqPolicy(
            cpu, None, (), (), None, None, None, (), (), None, None, None, None, None, None, None
        )
    for key in ("driver", "hardware limits", "available cpufreq governors", "current policy"):
        if key not in kv:
            raise ParseError(TOOL_FREQ, f"CPU {cpu}: missing {key!r} - output truncated")
    driver = kv["driver"][1]
    lo, _, hi = kv["hardware limits"][1].partition(" - ")
    pm = re.match(r"^frequency should be within (?P<lo>.+) and (?P<hi>.+)\.$", kv["current policy"][1])
    if not pm or governor is None:
        raise ParseError(TOOL_FREQ, f"CPU {cpu}: unreadable current policy", line_no=kv["current policy"][0])
    cur_khz = cur_src = None
    for line_no, value in current:
        cm = re.match(r"^(?P<f>.+) \(asserted by call to (?P<src>hardware|kernel)\)$", value)
        if cm:
            cur_khz, cur_src = _khz(cm.group("f"), line_no), cm.group("src")
        elif value != "Unable to call hardware":
            raise ParseError(TOOL_FREQ, f"current CPU frequency {value!r}", line_no=line_no)
    latency = kv.get("maximum transition latency", (0, ""))[1]
    steps = kv.get("available frequency steps", (0, ""))
    yes_no = {"yes": True, "no": False}
    return CpuFreqPolicy(
        cpu=cpu,
        driver=driver,
        related_cpus=_cpus(kv.get("CPUs which run at the same hardware frequency", (0, "Not Available"))[1]),
        affected_cpus=_cpus(
            kv.get("CPUs which need to have their frequency coordinated by software", (0, "Not Available"))[1]
        ),
        max_transition_latency=None if "Cannot determine" in latency or not latency else latency,
        hw_min_khz=_khz(lo, kv["hardware limits"][0]),
        hw_max_khz=_khz(hi, kv["hardware limits"][0]),
        available_governors=tuple(kv["available cpufreq governors"][1].split()),
        available_frequencies_khz=tuple(_khz(f, steps[0]) for f in steps[1].split(", ")) if steps[1] else (),
        policy_min_khz=_khz(pm.group("lo"), kv["current policy"][0]),
        policy_max_khz=_khz(pm.group("hi"), kv["current policy"][0]),
        governor=governor,
        current_khz=cur_khz,
        current_source=cur_src,
        boost_supported=yes_no.get(kv["Supported"][1]) if "Supported" in kv else None,
        boost_active=yes_no.get(kv["Active"][1]) if "Active" in kv else None,
    )


def parse_cpupower_frequency_info(text: str) -> list[CpuFreqPolicy]:
    """One entry per ``analyzing CPU n:`` block (``cpupower -c all frequency-info`` gives several)."""
    require_text(TOOL_FREQ, text)
    blocks: list[tuple[int, list[tuple[int, str]]]] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if m := re.match(r"^analyzing CPU (\d+):$", line):
            blocks.append((int(m.group(1)), []))
        elif not blocks:
            raise ParseError(TOOL_FREQ, "expected 'analyzing CPU n:'", line_no=line_no, line=raw)
        else:
            blocks[-1][1].append((line_no, line))
    if not blocks:
        raise ParseError(TOOL_FREQ, "no 'analyzing CPU n:' block")
    return [_freq_block(cpu, lines) for cpu, lines in blocks]
