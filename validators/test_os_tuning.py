"""OS tuning: kernel command line, C-states and governor on every CPU, hugepages, THP, NUMA balancing,
memlock (login and systemd), irqbalance, tuned. Expected values come from the plan's `tuning`."""

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
from clusterforge.certify.expect import NodeExpect
from clusterforge.certify.fixes import hint

pytestmark = pytest.mark.quick

CPU = "/sys/devices/system/cpu"
HUGE_KB = {"1G": 1048576, "2M": 2048}
VENDOR = "grep -m1 '^vendor_id' /proc/cpuinfo"
GOVERNORS = "cpu[0-9]*/cpufreq/scaling_governor"  # under CPU
LIMITS = (
    'for f in /etc/security/limits.conf /etc/security/limits.d/*.conf; do [ -f "$f" ] && '
    '{ echo "==> $f <=="; cat "$f"; }; done; true'
)
MEMLOCK = "systemctl show -p DefaultLimitMEMLOCK"
IRQBALANCE = f"systemctl show -p {readers.UNIT_PROPS} irqbalance.service"
TUNED = "tuned-adm active"


def hugepage_path(node: NodeExpect) -> str:
    return f"/sys/kernel/mm/hugepages/hugepages-{HUGE_KB[node.tuning['hugepages']['size']]}kB/nr_hugepages"


@prefetches
def commands(node: NodeExpect) -> list[str]:
    """What these checks read, fetched in one round trip per node."""
    return [
        read_cmd("/proc/cmdline"),
        VENDOR,
        IDLE_LISTING,
        read_cmd(f"{CPU}/online"),
        read_many_cmd(CPU, GOVERNORS),
        read_cmd(hugepage_path(node)),
        read_cmd("/sys/kernel/mm/transparent_hugepage/enabled"),
        read_cmd("/proc/sys/kernel/numa_balancing"),
        LIMITS,
        MEMLOCK,
        IRQBALANCE,
        TUNED,
    ]


def cpu_vendor(probe: Probe) -> str:
    """intel | amd | other, from the CPU itself (the os_tuning role decides the same way)."""
    out = probe.run(VENDOR, ok=(0, 1))
    return {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(out.partition(":")[2].strip(), "other")


def hugepages_value(node: NodeExpect) -> str:
    """``hugepages=`` as the role writes it: the count, or ``0:N0,1:N1`` per NUMA node (split evenly)."""
    hp = node.tuning["hugepages"]
    count, numa = int(hp["count"]), max(int(node.sku.get("cpu", {}).get("numa_nodes", 1)), 1)
    if not hp.get("per_numa") or numa == 1:
        return str(count)
    return ",".join(f"{i}:{count // numa + (1 if i < count % numa else 0)}" for i in range(numa))


def expected_cmdline(node: NodeExpect, vendor: str) -> dict[str, str]:
    """Boot parameters the os_tuning role sets from the plan: the C-state limit (Intel: intel_idle off and
    acpi_idle limited, tuning-facts §1.1) and boot-time hugepages (§2.1). IOMMU: see rdma.iommu."""
    params = {"intel_idle.max_cstate": "0"} if vendor == "intel" else {}
    params["processor.max_cstate"] = str(max(int(node.tuning["cstate_max"]), 1))
    hp = node.tuning["hugepages"]
    if int(hp["count"]):
        params |= {
            "default_hugepagesz": hp["size"],
            "hugepagesz": hp["size"],
            "hugepages": hugepages_value(node),
        }
    return params


def test_cmdline(node: NodeExpect, probe: Probe) -> None:
    have = probe.parse("cat /proc/cmdline", readers.cmdline)
    want = expected_cmdline(node, cpu_vendor(probe))
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
    limit = int(node.tuning["cstate_max"])
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
    want = node.tuning["governor"]
    values = readers.per_cpu(probe.read_many(CPU, GOVERNORS), "scaling_governor")
    bad = {f"cpu{c}": values.get(c, "<no cpufreq>") for c in _online(probe) if values.get(c) != want}
    expect_none_bad("scaling_governor", bad, f"{want} on every online CPU", hint("governor", node.name))


def test_hugepages(node: NodeExpect, probe: Probe) -> None:
    hp = node.tuning["hugepages"]
    kb = HUGE_KB[hp["size"]]
    count = int(hp["count"])
    if not hp.get("per_numa"):
        total = probe.read(hugepage_path(node))
        expect_equal(f"{hp['size']} hugepages", str(count), total, hint("hugepages", node.name))
        return
    per_node = probe.read_many(
        "/sys/devices/system/node", f"node[0-9]*/hugepages/hugepages-{int(kb)}kB/nr_hugepages"
    )
    bad = {p.split("/")[5]: v for p, v in per_node.items() if v != str(count)}
    expect_none_bad(
        f"{hp['size']} hugepages per NUMA node", bad, f"{count} on every node", hint("hugepages", node.name)
    )


def test_thp(node: NodeExpect, probe: Probe) -> None:
    mode = probe.parse("cat /sys/kernel/mm/transparent_hugepage/enabled", readers.bracketed)
    expect_equal("transparent hugepages", node.tuning["thp"], mode, hint("thp", node.name))


def test_numa_balancing(node: NodeExpect, probe: Probe) -> None:
    want = "1" if node.tuning["numa_balancing"] else "0"
    expect_equal(
        "kernel.numa_balancing",
        want,
        probe.read("/proc/sys/kernel/numa_balancing"),
        hint("numa_balancing", node.name),
    )


def test_memlock_login(node: NodeExpect, probe: Probe) -> None:
    """pam_limits gives ordinary users unlimited locked memory (soft and hard)."""
    text = probe.run(LIMITS)
    eff = readers.memlock_for_users(readers.limits(text, "/etc/security/limits.conf"))
    expect(
        eff.get("soft") == "unlimited" and eff.get("hard") == "unlimited",
        "memlock for logins (`*`)",
        "soft and hard unlimited",
        f"soft={eff.get('soft', 'unset')} hard={eff.get('hard', 'unset')}",
        hint("memlock", node.name),
    )


def test_memlock_systemd(node: NodeExpect, probe: Probe) -> None:
    """systemd services (slurmd, dcgm, ...) start with unlimited locked memory."""
    shown = probe.parse(MEMLOCK, readers.systemctl_show)
    value = shown.get("DefaultLimitMEMLOCK")
    if value is None:
        raise CheckError("systemctl show does not report DefaultLimitMEMLOCK")
    expect_equal("systemd DefaultLimitMEMLOCK", "infinity", value, hint("memlock", node.name))


def test_irqbalance(node: NodeExpect, probe: Probe) -> None:
    """Wanted: enabled and running (or skipped by its own start conditions, e.g. in a container, where the
    kernel's IRQs are the host's); not wanted: not running."""
    show = probe.parse(IRQBALANCE, readers.systemctl_show)
    found = f"{show.get('UnitFileState')}/{show.get('ActiveState')}" + (
        " (skipped)" if readers.unit_skipped(show) else ""
    )
    if node.tuning["irqbalance"]:
        ok = show.get("UnitFileState") == "enabled" and (
            show.get("ActiveState") == "active" or readers.unit_skipped(show)
        )
        want = "enabled/active"
    else:
        ok, want = show.get("ActiveState") != "active", "not active"
    expect(ok, "irqbalance.service", want, found, hint("irqbalance", node.name))


@pytest.mark.applies(lambda n: bool(n.tuning.get("tuned_profile")))
def test_tuned_profile(node: NodeExpect, probe: Probe) -> None:
    out = probe.run(TUNED)
    found = out.split(":", 1)[1].strip() if "Current active profile:" in out else out.strip()
    expect_equal("tuned profile", node.tuning["tuned_profile"], found or "<none>", hint("tuned", node.name))
