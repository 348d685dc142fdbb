"""Host readers: procfs.parse_meminfo, cpupower idle-info / frequency-info and lscpu on every
``meminfo-huge__*``, ``cpupower-idle-info__*``, ``cpupower-frequency-info__*`` and ``lscpu__*`` real
capture."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError, procfs
from clusterforge.hw.cpupower import parse_cpupower_frequency_info, parse_cpupower_idle_info
from clusterforge.hw.lscpu import parse_lscpu
from clusterforge.hw.procfs import parse_meminfo

from .conftest import head

Real = Callable[[str], str]


# ---------------------------------------------------------------------------------------------- meminfo
def test_meminfo_512x1g(real: Real) -> None:
    """meminfo-huge__compute-node-512x1G-osism__1.txt - osism/osism.github.io:
    docs/guides/operations-guide/openstack/nova.md "Huge pages" (``grep Huge /proc/meminfo``) @53924c77."""
    m = parse_meminfo(real("meminfo-huge__compute-node-512x1G-osism__1.txt"))
    assert (m.hugepages_total, m.hugepages_free, m.hugepages_rsvd, m.hugepages_surp) == (512, 512, 0, 0)
    assert (m.hugepagesize_kb, m.hugetlb_kb, m.anon_hugepages_kb, m.mem_total_kb) == (
        1048576,
        536870912,
        0,
        None,
    )
    assert m.values["FileHugePages"] == 0


def test_meminfo_8x1g_kernel_415(real: Real) -> None:
    """meminfo-huge__dpdk-sriov-host-8x1G-grep-huge-twblog__5.txt - code-index file id 4439312259 (DPDK/SR-IOV
    notes, kernel 4.15: no Hugetlb/FileHugePages lines)."""
    m = parse_meminfo(real("meminfo-huge__dpdk-sriov-host-8x1G-grep-huge-twblog__5.txt"))
    assert (m.hugepages_total, m.hugepages_free, m.hugepagesize_kb, m.hugetlb_kb) == (8, 8, 1048576, None)


def test_meminfo_zero_allocated(real: Real) -> None:
    """meminfo-huge__qemu-1G-default-zero-allocated-linux-hugetlb-fix__3.txt - upstream kernel commit
    76e961157e07 message ("w/o this patch" block). FAILURE mode: 1 GiB page size but HugePages_Total 0."""
    m = parse_meminfo(real("meminfo-huge__qemu-1G-default-zero-allocated-linux-hugetlb-fix__3.txt"))
    assert (m.hugepages_total, m.hugepagesize_kb, m.hugetlb_kb) == (0, 1048576, 0)


def test_meminfo_full_file_and_errors(real: Real) -> None:
    full = "MemTotal:       2113362652 kB\nMemFree:        2061528572 kB\nMemAvailable:   2070102868 kB\n"
    m = parse_meminfo(full)
    assert (m.mem_total_kb, m.mem_available_kb, m.hugepages_total) == (2113362652, 2070102868, None)
    text = real("meminfo-huge__compute-node-512x1G-osism__1.txt")
    with pytest.raises(ParseError, match="neither MemTotal nor"):
        parse_meminfo(head(text, 3))  # AnonHugePages..FileHugePages only
    with pytest.raises(ParseError, match="incomplete"):
        parse_meminfo(head(text, 5))  # HugePages_Total/Free but no Rsvd/Surp/Hugepagesize
    for garbage in ("", "hello\n", "HugePages_Total: 8 kB\n", "MemTotal: lots\n"):
        with pytest.raises(ParseError):
            parse_meminfo(garbage)


# ------------------------------------------------------------------------------------ cpupower idle-info
def test_idle_info_c3_c6_disabled(real: Real) -> None:
    """cpupower-idle-info__intel_idle-c3-c6-disabled-cpuperfnote__2.txt - code-index note id 1675275487;
    ``C3 (DISABLED) :`` markers."""
    info = parse_cpupower_idle_info(real("cpupower-idle-info__intel_idle-c3-c6-disabled-cpuperfnote__2.txt"))
    assert (info.driver, info.governor, info.cpu) == ("intel_idle", "menu", 0)
    assert [s.name for s in info.states] == ["POLL", "C1", "C1E", "C3", "C6"]
    assert info.enabled_states == ("POLL", "C1", "C1E") and info.state("C6").disabled
    c1e = info.state("C1E")
    assert (c1e.description, c1e.latency_us, c1e.usage, c1e.duration_us) == (
        "MWAIT 0x01",
        10,
        434740,
        92667162179,
    )
    assert (
        info.state("C6").latency_us == 133 and info.max_enabled_latency_us == 10 and c1e.residency_us is None
    )


def test_idle_info_acpi_max_cstate1(real: Real) -> None:
    """cpupower-idle-info__amd-acpi_idle-max_cstate1-poll-c1-nixnote__5.txt - code-index note id 44392097962
    (``processor.max_cstate=1 intel_idle.max_cstate=0``): acpi_idle, POLL + C1 only."""
    info = parse_cpupower_idle_info(
        real("cpupower-idle-info__amd-acpi_idle-max_cstate1-poll-c1-nixnote__5.txt")
    )
    assert (info.driver, info.cpu, info.enabled_states) == ("acpi_idle", 30, ("POLL", "C1"))
    assert info.state("C1").description == "ACPI FFH MWAIT 0x0" and info.state("C1").duration_us == 7742516699


def test_idle_info_lkml_before(real: Real) -> None:
    """cpupower-idle-info__intel_idle-poll-c1-c1e-only-lkml-before__3.txt - LKML (Shuah Khan quoting Aboorva
    Devarajan's "cpupower: display residency value in idle-info", "Before Patch" block), CPU 28."""
    info = parse_cpupower_idle_info(
        real("cpupower-idle-info__intel_idle-poll-c1-c1e-only-lkml-before__3.txt")
    )
    assert info.cpu == 28 and [s.usage for s in info.states] == [7448, 7023, 18468]


def test_idle_info_residency_and_errors(real: Real) -> None:
    newer = (
        "CPUidle driver: intel_idle\nCPUidle governor: menu\nanalyzing CPU 0:\n\nNumber of idle states: 1\n"
        "Available idle states: C6\nC6:\nFlags/Description: MWAIT 0x20\nLatency: 290\nResidency: 800\n"
        "Usage: 5\nDuration: 100\n"
    )
    assert parse_cpupower_idle_info(newer).state("C6").residency_us == 800
    none = "CPUidle driver: none\nCPUidle governor: menu\nanalyzing CPU 0:\n\nCPU 0: No idle states\n"
    assert parse_cpupower_idle_info(none).states == ()
    text = real("cpupower-idle-info__intel_idle-c3-c6-disabled-cpuperfnote__2.txt")
    with pytest.raises(ParseError, match="truncated"):
        parse_cpupower_idle_info(head(text, 20))  # C3 and C6 blocks lost
    for garbage in ("", "hello\n", "CPUidle driver: intel_idle\n"):
        with pytest.raises(ParseError):
            parse_cpupower_idle_info(garbage)
    assert procfs.parse_cpuidle is parse_cpupower_idle_info


# ------------------------------------------------------------------------------- cpupower frequency-info
def test_freq_info_cppc_arm(real: Real) -> None:
    """cpupower-frequency-info__arm-cppc_cpufreq-hwcloud-cpuperfnote__3.txt - code-index note id 1675275487
    (Huawei Cloud ARM VM): no boost block, ``asserted by call to hardware``."""
    [p] = parse_cpupower_frequency_info(
        real("cpupower-frequency-info__arm-cppc_cpufreq-hwcloud-cpuperfnote__3.txt")
    )
    assert (p.driver, p.governor, p.related_cpus, p.max_transition_latency) == (
        "cppc_cpufreq",
        "performance",
        (0, 1, 2, 3),
        None,
    )
    assert (p.hw_min_khz, p.hw_max_khz, p.current_khz, p.current_source) == (
        2400000,
        2400000,
        2400000,
        "hardware",
    )
    assert "schedutil" in p.available_governors and p.boost_supported is None


def test_freq_info_intel_cpufreq(real: Real) -> None:
    """cpupower-frequency-info__intel_cpufreq-performance-cpuperfnote__4.txt - same note (id 1675275487)."""
    [p] = parse_cpupower_frequency_info(
        real("cpupower-frequency-info__intel_cpufreq-performance-cpuperfnote__4.txt")
    )
    assert (p.driver, p.max_transition_latency, p.hw_min_khz, p.hw_max_khz) == (
        "intel_cpufreq",
        "20.0 us",
        1200000,
        3000000,
    )
    assert (p.policy_min_khz, p.policy_max_khz, p.governor) == (3000000, 3000000, "performance")
    assert (p.current_khz, p.current_source, p.boost_supported, p.boost_active) == (
        2210000,
        "kernel",
        True,
        True,
    )


def test_freq_info_all_cpus(real: Real) -> None:
    """cpupower-frequency-info__intel_pstate-c-all-4cpu-insightscore__2.txt - RedHatInsights/insights-core:
    insights/tests/parsers/test_cpupower_frequency_info.py (CPUPOWER_INFO_MULTI) @43cbb25f; ``-c all``."""
    policies = parse_cpupower_frequency_info(
        real("cpupower-frequency-info__intel_pstate-c-all-4cpu-insightscore__2.txt")
    )
    assert [p.cpu for p in policies] == [0, 1, 2, 3] and {p.driver for p in policies} == {"intel_pstate"}
    assert [p.current_khz for p in policies] == [1220000, 1220000, 871000, 868000]
    assert (
        policies[0].available_governors == ("performance", "powersave") and policies[3].hw_min_khz == 800000
    )


def test_freq_info_errors(real: Real) -> None:
    text = real("cpupower-frequency-info__intel_pstate-c-all-4cpu-insightscore__2.txt")
    with pytest.raises(ParseError, match="CPU 3: missing"):
        parse_cpupower_frequency_info(head(text, 54))  # CPU 3 block cut before 'hardware limits'
    vm = (
        "analyzing CPU 0:\n  no or unknown cpufreq driver is active on this CPU\n"
        "  maximum transition latency: 4294.55 ms.\n"
    )
    assert parse_cpupower_frequency_info(vm)[0].driver is None
    for garbage in ("", "hello\n", "analyzing CPU 0:\n  driver: x\n  hardware limits: fast - slow\n"):
        with pytest.raises(ParseError):
            parse_cpupower_frequency_info(garbage)


# ----------------------------------------------------------------------------------------------- lscpu
def test_lscpu_kvm_guest_16_vcpus(real: Real) -> None:
    """lscpu__xeon-16vcpu-h100-vm-device__1.txt - scripts/capture-node.sh on a lent H100 machine (a
    Firecracker/KVM guest): one socket, one NUMA node, no SMT, the hypervisor flag set."""
    c = parse_lscpu(real("lscpu__xeon-16vcpu-h100-vm-device__1.txt"))
    assert (c.architecture, c.model_name, c.vendor_id) == (
        "x86_64",
        "Intel(R) Xeon(R) Processor",
        "GenuineIntel",
    )
    assert (c.cpus, c.sockets, c.cores_per_socket, c.threads_per_core, c.numa_nodes) == (16, 1, 16, 1, 1)
    assert c.numa_node_cpulists == {0: "0-15"} and c.fields["Hypervisor vendor"] == "KVM"
    assert c.has_flag("hypervisor") and c.has_flag("avx512f")


def test_lscpu_epyc_wrapped_flags(real: Real) -> None:
    """lscpu__a100x8-epyc7742-oyanghd__1.txt - oyanghd/gpu-compress-decompress docs/project_description_EN.md
    lines 70-120 @6ce00a5e; flags wrapped by the terminal mid-word (``non``/``stop_tsc``, ``sti``/``bp``)."""
    c = parse_lscpu(real("lscpu__a100x8-epyc7742-oyanghd__1.txt"))
    assert (c.architecture, c.model_name, c.vendor_id) == (
        "x86_64",
        "AMD EPYC 7742 64-Core Processor",
        "AuthenticAMD",
    )
    assert (c.cpus, c.sockets, c.cores_per_socket, c.threads_per_core, c.numa_nodes) == (256, 2, 64, 2, 8)
    assert c.numa_node_cpulists[3] == "48-63,176-191" and len(c.numa_node_cpus[7]) == 32
    assert c.numa_node_cpus[0][:2] == (0, 1) and c.numa_node_cpus[0][16] == 128 and len(c.online_cpus) == 256
    for flag in ("nonstop_tsc", "stibp", "abm", "overflow_recov", "succor", "smca", "sev"):
        assert c.has_flag(flag), flag
    assert not c.has_flag("non") and not c.has_flag("sti") and c.fields["L3 cache"] == "512 MiB"


def test_lscpu_kvm_xeon(real: Real) -> None:
    """lscpu__h100x8-kvm-xeon8480plus-dstack__2.txt - dstackai/benchmarks
    comparison/h100sxm5_vs_mi300x/README.md
    lines 51-90 @85a2fe17; modern util-linux layout, KVM guest."""
    c = parse_lscpu(real("lscpu__h100x8-kvm-xeon8480plus-dstack__2.txt"))
    assert (c.model_name, c.cpus, c.sockets, c.cores_per_socket, c.numa_nodes) == (
        "Intel(R) Xeon(R) Platinum 8480+",
        208,
        2,
        52,
        2,
    )
    assert c.numa_node_cpulists == {0: "0-103", 1: "104-207"} and c.hypervisor_vendor == "KVM"
    assert c.has_flag("avx512_fp16") and c.fields["L3 cache"] == "32 MiB (2 instances)"


def test_lscpu_tree_layout() -> None:
    """util-linux >= 2.37 prints a tree (indented sub-keys, section headers) on a terminal; synthetic sample
    of that layout (the shared captures are both flat)."""
    text = (
        "Architecture:             x86_64\n"
        "  CPU op-mode(s):         32-bit, 64-bit\n"
        "CPU(s):                   4\n"
        "  On-line CPU(s) list:    0-3\n"
        "Vendor ID:                GenuineIntel\n"
        "  Model name:             Intel(R) Xeon(R) Platinum 8480+\n"
        "    Thread(s) per core:   2\n"
        "    Core(s) per socket:   2\n"
        "    Socket(s):            1\n"
        "    Flags:                fpu vme de pse tsc msr pae mce cx8 apic clflush\n"
        "                           mmx fxsr sse sse2\n"
        "Caches (sum of all):\n"
        "  L3:                     105 MiB (1 instance)\n"
        "NUMA:\n"
        "  NUMA node(s):           1\n"
        "  NUMA node0 CPU(s):      0-3\n"
    )
    c = parse_lscpu(text)
    assert (c.model_name, c.sockets, c.numa_nodes, c.numa_node_cpus) == (
        "Intel(R) Xeon(R) Platinum 8480+", 1, 1, {0: (0, 1, 2, 3)})  # fmt: skip
    assert c.has_flag("clflush") and c.has_flag("mmx") and c.fields["L3"] == "105 MiB (1 instance)"


def test_lscpu_truncated_and_garbage(real: Real) -> None:
    with pytest.raises(ParseError, match="NUMA node"):
        parse_lscpu(head(real("lscpu__a100x8-epyc7742-oyanghd__1.txt"), 20))
    with pytest.raises(ParseError, match="CPU lists"):
        parse_lscpu(head(real("lscpu__a100x8-epyc7742-oyanghd__1.txt"), 28))  # only nodes 0-1 listed
    for garbage in ("", "hello world\n", "Architecture: x86_64\n"):
        with pytest.raises(ParseError):
            parse_lscpu(garbage)
