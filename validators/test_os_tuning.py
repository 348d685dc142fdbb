"""OS tuning: kernel command line, C-states and governor on every CPU, hugepages (per NUMA node where
split), THP, every declared sysctl, memlock (login and systemd), irqbalance, tuned. Expected values are the
node's compiled desired state in plan.json (plan/desired.py), the same values the os_tuning role applies:
nothing is derived here again."""

from __future__ import annotations

import pytest

from clusterforge.certify import readers
from clusterforge.certify.checks import (
    CheckError,
    Probe,
    expect,
    expect_equal,
    expect_none_bad,
    prefetches,
    read_cmd,
    read_many_cmd,
)
from clusterforge.certify.fixes import hint
from clusterforge.plan.expect import NodeExpect

pytestmark = pytest.mark.quick

CPU = "/sys/devices/system/cpu"
GOVERNORS = "cpu[0-9]*/cpufreq/scaling_governor"  # under CPU
LIMITS = (
    'for f in /etc/security/limits.conf /etc/security/limits.d/*.conf; do [ -f "$f" ] && '
    '{ echo "==> $f <=="; cat "$f"; }; done; true'
)
MEMLOCK = "systemctl show -p DefaultLimitMEMLOCK"
IRQBALANCE = f"systemctl show -p {readers.UNIT_PROPS} irqbalance.service"
TUNED = "tuned-adm active"


def hugepage_path(node: NodeExpect) -> str:
    return f"/sys/kernel/mm/hugepages/hugepages-{node.desired['hugepages']['size_kb']}kB/nr_hugepages"


def numa_hugepage_path(node: NodeExpect, numa: str) -> str:
    kb = node.desired["hugepages"]["size_kb"]
    return f"/sys/devices/system/node/node{numa}/hugepages/hugepages-{kb}kB/nr_hugepages"


def sysctl_path(key: str) -> str:
    """/proc/sys path of a sysctl (a key with "/" in it is already a path, as the role takes it)."""
    return "/proc/sys/" + (key if "/" in key else key.replace(".", "/"))


@prefetches
def commands(node: NodeExpect) -> list[str]:
    """What these checks read, fetched in one round trip per node."""
    hp = node.desired["hugepages"]
    return [
        read_cmd("/proc/cmdline"),
        IDLE_LISTING,
        read_cmd(f"{CPU}/online"),
        read_many_cmd(CPU, GOVERNORS),
        read_cmd(hugepage_path(node)),
        *(read_cmd(numa_hugepage_path(node, n)) for n in sorted(hp["per_numa"] or {}, key=int)),
        read_cmd("/sys/kernel/mm/transparent_hugepage/enabled"),
        *(read_cmd(sysctl_path(k)) for k in node.desired["sysctls"]),
        LIMITS,
        MEMLOCK,
        IRQBALANCE,
        TUNED,
    ]


def expected_cmdline(node: NodeExpect) -> dict[str, str]:
    """The compiled kernel parameters (C-state limit, IOMMU, boot-time hugepages), as name -> value."""
    return dict(p.partition("=")[::2] for p in node.desired["kernel"]["cmdline"])


def test_cmdline(node: NodeExpect, probe: Probe) -> None:
    have = probe.parse("cat /proc/cmdline", readers.cmdline)
    want = expected_cmdline(node)
    wrong = {k: ",".join(have.get(k, ["<absent>"])) for k, v in want.items() if have.get(k, [None])[-1] != v}
    expect_none_bad(
        "kernel command line",
        wrong,
        " ".join(f"{k}={v}" for k, v in want.items()),
        hint("cmdline", node.name),
    )


def _online(probe: Probe) -> list[int]:
    return probe.parse(read_cmd(f"{CPU}/online"), readers.cpulist)


IDLE_LISTING = (
    f"cd {CPU} && set -- cpu[0-9]*/cpuidle/state[0-9]*/disable; "
    'if [ ! -e "$1" ]; then cat cpuidle/current_driver; exit 0; fi; '
    "grep -H -m1 '' cpu[0-9]*/cpuidle/state[0-9]*/disable cpu[0-9]*/cpuidle/state[0-9]*/name"
)


def _idle(text: str) -> dict[int, dict[int, readers.IdleState]] | str:
    """Per-CPU idle states, or the cpuidle driver's name when no CPU has any."""
    if ":" not in text:
        return text.strip()
    return readers.cpuidle(dict(line.split(":", 1) for line in text.splitlines() if ":" in line))


def test_cstates(node: NodeExpect, probe: Probe) -> None:
    """Every idle state deeper than `cstate_max` is disabled on EVERY online CPU."""
    limit = int(node.desired["cpu"]["cstate_max"])
    states = probe.parse(IDLE_LISTING, _idle)
    online = _online(probe)
    if isinstance(
        states, str
    ):  # no per-CPU idle states at all: only a disabled cpuidle subsystem is acceptable
        expect(
            states == "none",
            "cpuidle",
            "per-CPU idle states, or cpuidle driver 'none'",
            f"no idle states, driver {states!r}",
            hint("cstates", node.name),
        )
        return
    bad: dict[str, str] = {}
    for cpu in online:
        if cpu not in states:
            bad[f"cpu{cpu}"] = "no cpuidle states"
            continue
        deep = [s.name for i, s in sorted(states[cpu].items()) if i > limit and not s.disabled]
        if deep:
            bad[f"cpu{cpu}"] = "+".join(deep) + " enabled"
    probe.note("cpus_checked", len(online))
    expect_none_bad(
        f"idle states deeper than state{limit}",
        bad,
        f"state{limit + 1}+ disabled on all {len(online)} online CPUs",
        hint("cstates", node.name),
    )


def test_governor(node: NodeExpect, probe: Probe) -> None:
    want = node.desired["cpu"]["governor"]
    values = readers.per_cpu(probe.read_many(CPU, GOVERNORS), "scaling_governor")
    bad = {f"cpu{c}": values.get(c, "<no cpufreq>") for c in _online(probe) if values.get(c) != want}
    expect_none_bad("scaling_governor", bad, f"{want} on every online CPU", hint("governor", node.name))


def test_hugepages(node: NodeExpect, probe: Probe) -> None:
    """The boot-time total, and where the plan splits it (per_numa) the count on each NUMA node."""
    hp = node.desired["hugepages"]
    fix = hint("hugepages", node.name)
    expect_equal(f"{hp['size']} hugepages", str(hp["total"]), probe.read(hugepage_path(node)), fix)
    per = hp["per_numa"] or {}
    have = {f"node{n}": probe.read(numa_hugepage_path(node, n)) for n in sorted(per, key=int)}
    bad = {f"node{n}": have[f"node{n}"] for n in per if have[f"node{n}"] != str(per[n])}
    expect_none_bad(
        f"{hp['size']} hugepages per NUMA node",
        bad,
        ", ".join(f"node{n}={per[n]}" for n in sorted(per, key=int)),
        fix,
    )


def test_thp(node: NodeExpect, probe: Probe) -> None:
    mode = probe.parse("cat /sys/kernel/mm/transparent_hugepage/enabled", readers.bracketed)
    expect_equal("transparent hugepages", node.desired["thp"], mode, hint("thp", node.name))


def test_sysctls(node: NodeExpect, probe: Probe) -> None:
    """Every declared sysctl has its value (compared word by word: tcp_rmem shows tabs)."""
    want: dict[str, str] = node.desired["sysctls"]
    found: dict[str, str] = {}
    unreadable: list[str] = []
    for key in want:
        try:
            found[key] = probe.read(sysctl_path(key))
        except CheckError:
            unreadable.append(key)
    bad = {k: " ".join(v.split()) for k, v in found.items() if v.split() != str(want[k]).split()}
    expect_none_bad(
        "sysctls",
        bad,
        ", ".join(f"{k}={want[k]}" for k in bad) or "every declared value",
        hint("sysctl", node.name),
    )
    if unreadable:
        raise CheckError(f"cannot read sysctl(s) {', '.join(unreadable)} under /proc/sys")


def test_memlock_login(node: NodeExpect, probe: Probe) -> None:
    """pam_limits gives ordinary users unlimited locked memory (soft and hard)."""
    want = node.desired["limits"]["memlock_login"]
    text = probe.run(LIMITS)
    eff = readers.memlock_for_users(readers.limits(text, "/etc/security/limits.conf"))
    expect(
        eff.get("soft") == want["soft"] and eff.get("hard") == want["hard"],
        "memlock for logins (`*`)",
        f"soft={want['soft']} hard={want['hard']}",
        f"soft={eff.get('soft', 'unset')} hard={eff.get('hard', 'unset')}",
        hint("memlock", node.name),
    )


def test_memlock_systemd(node: NodeExpect, probe: Probe) -> None:
    """systemd services (slurmd, dcgm, ...) start with unlimited locked memory."""
    shown = probe.parse(MEMLOCK, readers.systemctl_show)
    value = shown.get("DefaultLimitMEMLOCK")
    if value is None:
        raise CheckError("systemctl show does not report DefaultLimitMEMLOCK")
    want = node.desired["limits"]["memlock_systemd"]
    expect_equal("systemd DefaultLimitMEMLOCK", want, value, hint("memlock", node.name))


def test_irqbalance(node: NodeExpect, probe: Probe) -> None:
    """Wanted: enabled and running (or skipped by its own start conditions, e.g. in a container, where the
    kernel's IRQs are the host's); not wanted: not running."""
    show = probe.parse(IRQBALANCE, readers.systemctl_show)
    found = f"{show.get('UnitFileState')}/{show.get('ActiveState')}" + (
        " (skipped)" if readers.unit_skipped(show) else ""
    )
    if node.desired["services"]["irqbalance"]:
        ok = show.get("UnitFileState") == "enabled" and (
            show.get("ActiveState") == "active" or readers.unit_skipped(show)
        )
        want = "enabled/active"
    else:
        ok, want = show.get("ActiveState") != "active", "not active"
    expect(ok, "irqbalance.service", want, found, hint("irqbalance", node.name))


@pytest.mark.applies(lambda n: bool(n.desired["services"]["tuned_profile"]))
def test_tuned_profile(node: NodeExpect, probe: Probe) -> None:
    out = probe.run(TUNED)
    found = out.split(":", 1)[1].strip() if "Current active profile:" in out else out.strip()
    want = node.desired["services"]["tuned_profile"]
    expect_equal("tuned profile", want, found or "<none>", hint("tuned", node.name))
