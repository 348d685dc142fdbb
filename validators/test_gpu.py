"""GPUs against the SKU: count, model, memory, driver branch, persistence, ECC, remapped rows, ECC errors,
Xid since boot, NVLink, topology, PCIe, fabric manager, MIG, clock event reasons."""

from __future__ import annotations

import pytest

from clusterforge.certify import xid as xid_policy
from clusterforge.certify.checks import (
    CheckError,
    CheckFailed,
    Probe,
    expect,
    expect_equal,
    expect_none_bad,
    prefetches,
)
from clusterforge.certify.fixes import hint
from clusterforge.hw import xid as xid_log
from clusterforge.hw.nvidia_smi import GpuQ, NvidiaSmiQ, parse_nvlink_status, parse_q, parse_topo
from clusterforge.plan.expect import NodeExpect

pytestmark = pytest.mark.quick

SMI_Q = "nvidia-smi -q"
KERNEL_LOGS = ("journalctl -k -b -q --no-pager -o short-iso", "dmesg")
#: clock event reasons that do not mean trouble (Azure NHC: 0x0 none, 0x1 idle, 0x4 SW power cap)
BENIGN_CLOCK_REASONS = frozenset({"Idle", "SW Power Cap"})
MEMORY_TOLERANCE = 0.02
NVLINK = "nvidia-smi nvlink --status"
TOPO = "nvidia-smi topo -m"
FABRICMANAGER = "systemctl is-active nvidia-fabricmanager"
ACS_STATUS = "/usr/local/sbin/clusterforge-acs --status"


@prefetches
def commands(node: NodeExpect) -> list[str]:
    return (
        [SMI_Q, NVLINK, TOPO, *KERNEL_LOGS]
        + ([FABRICMANAGER] if node.nvswitch else [])
        + ([ACS_STATUS] if node.desired["pcie"]["acs_disable"] else [])
    )


def smi(probe: Probe) -> NvidiaSmiQ:
    return probe.parse(SMI_Q, parse_q)


def gpus(probe: Probe) -> tuple[GpuQ, ...]:
    return smi(probe).gpus


def test_count(node: NodeExpect, probe: Probe) -> None:
    q = smi(probe)
    want = int(node.gpu["count"])
    expect_equal("GPU count (nvidia-smi)", want, len(q.gpus), hint("gpu_missing", node.name))
    expect_equal("Attached GPUs", want, q.attached_gpus, hint("gpu_missing", node.name))


def test_model(node: NodeExpect, probe: Probe) -> None:
    """Product name and architecture (nvidia-smi's "Product Architecture", compared case-blind)."""
    want, arch = node.gpu["model"], str(node.gpu["architecture"])
    bad = {
        g.bus_id: f"{g.product_name} ({g.architecture})"
        for g in gpus(probe)
        if g.product_name != want or (g.architecture or "").casefold() != arch.casefold()
    }
    expect_none_bad("GPU model", bad, f"{want} ({arch})", hint("topology", node.name))


POWER_TOLERANCE_W = 1.0  # nvidia-smi prints the limit with two decimals


def test_power_limit(node: NodeExpect, probe: Probe) -> None:
    """The enforced power limit of every GPU is the SKU's: a cap below it (set by hand, a site tool or the
    BMC) costs throughput without any error showing."""
    want = float(node.gpu["power_limit_w"])
    bad = {
        g.bus_id: "not reported" if g.power_limit_w is None else f"{g.power_limit_w:.2f} W"
        for g in gpus(probe)
        if g.power_limit_w is None or abs(g.power_limit_w - want) > POWER_TOLERANCE_W
    }
    expect_none_bad("GPU power limit", bad, f"{want:.2f} W", hint("power_cap", node.name))


def test_memory(node: NodeExpect, probe: Probe) -> None:
    want = int(node.gpu["memory_mib"])
    bad = {
        g.bus_id: f"{g.memory_total_mib} MiB"
        for g in gpus(probe)
        if g.memory_total_mib is None or abs(g.memory_total_mib - want) > want * MEMORY_TOLERANCE
    }
    # more memory than the SKU says is other hardware (an H200 in an H100 pool, seen on the lent machine),
    # not a failing GPU: the SKU fix, as for the model; less is the GPU's own fault
    larger = any((g.memory_total_mib or 0) > want * (1 + MEMORY_TOLERANCE) for g in gpus(probe))
    fix = hint("topology" if larger else "gpu_hw", node.name)
    expect_none_bad("GPU memory", bad, f"{want} MiB (±{MEMORY_TOLERANCE:.0%})", fix)


def test_driver_branch(node: NodeExpect, probe: Probe) -> None:
    branch = str(node.pins["nvidia_driver"]["branch"])
    found = smi(probe).driver_version
    expect(found.split(".")[0] == branch, "driver branch", branch, found, hint("driver", node.name))


def test_persistence_mode(node: NodeExpect, probe: Probe) -> None:
    bad = {g.bus_id: g.persistence_mode for g in gpus(probe) if g.persistence_mode != "Enabled"}
    expect_none_bad("persistence mode", bad, "Enabled on every GPU", hint("persistence", node.name))


def test_ecc_mode(node: NodeExpect, probe: Probe) -> None:
    want = "Enabled" if node.tuning.get("ecc", True) else "Disabled"
    bad = {
        g.bus_id: f"current {g.ecc_mode_current}, pending {g.ecc_mode_pending}"
        for g in gpus(probe)
        if g.ecc_mode_current != want or g.ecc_mode_pending not in (None, want)
    }
    expect_none_bad("ECC mode", bad, f"{want} (current and pending)", hint("ecc_mode", node.name))


def test_remapped_rows(node: NodeExpect, probe: Probe) -> None:
    """No pending row remap, no remap failure; pre-Ampere: retired pages under the SKU limit, none pending."""
    limit = node.threshold("retired_pages_max")
    bad: dict[str, str] = {}
    for g in gpus(probe):
        rr, rp = g.remapped_rows, g.retired_pages
        if rr is None and rp is None:
            raise CheckError(f"{g.bus_id}: nvidia-smi -q shows neither Remapped Rows nor Retired Pages")
        if rr is not None and (rr.pending is not False or rr.failure_occurred is not False):
            bad[g.bus_id] = f"remap pending={rr.pending} failure={rr.failure_occurred}"
        if rp is not None:
            retired = (rp.single_bit_ecc or 0) + (rp.double_bit_ecc or 0)
            if rp.pending or retired > limit.value:
                bad[g.bus_id] = f"retired pages {retired}, pending={rp.pending}"
    expect_none_bad(
        "row remapping / page retirement",
        bad,
        f"no pending remap, no remap failure, retired pages <= {limit}",
        hint("gpu_hw", node.name),
    )


def test_ecc_errors(node: NodeExpect, probe: Probe) -> None:
    """Volatile uncorrectable ECC = 0; corrected errors under the SKU thresholds."""
    sram_max = node.threshold("ecc_sram_correctable_max")
    dram_max = node.threshold("ecc_dram_correctable_max")
    bad: dict[str, str] = {}
    for g in gpus(probe):
        v = g.ecc_volatile
        if v is None:
            raise CheckError(f"{g.bus_id}: nvidia-smi -q shows no volatile ECC counters")
        unc = (v.sram_uncorrectable or 0) + (v.dram_uncorrectable or 0) + (v.double_bit_total or 0)
        if unc:
            bad[g.bus_id] = f"{unc} uncorrectable"
        elif (v.sram_correctable or 0) > sram_max.value or (v.dram_correctable or 0) > dram_max.value:
            bad[g.bus_id] = f"corrected sram={v.sram_correctable} dram={v.dram_correctable}"
    expect_none_bad(
        "ECC errors (volatile)",
        bad,
        f"0 uncorrectable; corrected sram <= {sram_max.value:g}, dram <= {dram_max.value:g}",
        hint("gpu_hw", node.name),
    )


def test_xid(node: NodeExpect, probe: Probe) -> None:
    """No Xid of the fatal class (xid_policy.yaml) in the kernel log since boot."""
    events, read, errors = [], [], []
    for cmd in KERNEL_LOGS:
        try:
            events += probe.parse(cmd, xid_log.parse)
            read.append(cmd)
        except CheckError as exc:
            errors.append(str(exc))
    if not read:
        raise CheckError("no kernel log could be read: " + " | ".join(errors))
    fatal, other = xid_policy.judge(events)
    probe.note("kernel_logs", read)
    probe.note("xids", [c.describe() for c in fatal + other][:50])
    expect_none_bad(
        "Xid events since boot",
        [c.describe() for c in fatal],
        "no Xid of the fatal class",
        hint("gpu_hw", node.name),
        limit=4,
    )


def test_nvlink(node: NodeExpect, probe: Probe) -> None:
    nv = node.gpu["nvlink"]
    want_links = int(nv["links_per_gpu"])
    min_speed = float(nv["link_speed_gbs"]) * 0.99
    status = probe.parse(NVLINK, parse_nvlink_status)
    if not status:
        raise CheckFailed(
            "NVLink",
            f"{want_links} active links per GPU on {node.gpu['count']} GPUs",
            "no NVLink on any GPU (`nvidia-smi nvlink --status` printed nothing: links absent or not exposed "
            "to this OS)",
            hint("nvlink_hw", node.name),
        )
    expect_equal(
        "GPUs in nvlink --status", int(node.gpu["count"]), len(status), hint("gpu_missing", node.name)
    )
    bad: dict[str, str] = {}
    for g in status:
        down = [ln.link for ln in g.links if ln.inactive]
        slow = [ln.link for ln in g.links if not ln.inactive and (ln.speed_gbps or 0) < min_speed]
        if g.all_inactive or len(g.links) != want_links or down or slow:
            bad[f"GPU{g.index}"] = (
                f"{len(g.links)} links"
                + (f", inactive {down}" if down else "")
                + (f", slow {slow}" if slow else "")
                + (", all inactive" if g.all_inactive else "")
            )
    expect_none_bad(
        "NVLinks",
        bad,
        f"{want_links} active links per GPU at >= {min_speed:.2f} GB/s",
        hint("nvlink_hw", node.name),
    )


def test_topology(node: NodeExpect, probe: Probe) -> None:
    """GPU↔GPU links are the SKU's NVLink bond (NV18/NV12); each rail NIC sits next to its GPU (PIX/PXB)."""
    topo = probe.parse(TOPO, parse_topo)
    want = node.gpu["nvlink"]["topo_link"]
    bad: dict[str, str] = {}
    for a in topo.gpus:
        for b in topo.gpus:
            if a != b and topo.links[a].get(b) != want:
                bad[f"{a}-{b}"] = str(topo.links[a].get(b))
    label = {dev: nic for nic, dev in topo.nic_names.items()}
    for r in node.rails:
        if not r.gpu_link:
            continue
        nic = label.get(r.hca, r.hca if r.hca in topo.nics else None)
        got = topo.links.get(f"GPU{r.gpu}", {}).get(nic) if nic else "NIC absent"
        if got != r.gpu_link:
            bad[f"GPU{r.gpu}-{r.hca}"] = str(got)
    expect_none_bad(
        "nvidia-smi topo -m",
        bad,
        f"{want} between GPUs, rail NICs at their GPU's switch",
        hint("topology", node.name),
    )


def test_pcie(node: NodeExpect, probe: Probe) -> None:
    gen, width = int(node.gpu["pcie"]["generation"]), int(node.gpu["pcie"]["width"])
    bad: dict[str, str] = {}
    for g in gpus(probe):
        maxes = [v for v in (g.pcie_gen_max, g.pcie_gen_host_max) if v is not None]
        link_gen = min(maxes) if maxes else None
        if link_gen is None or link_gen < gen or g.link_width_current != width:
            bad[g.bus_id] = f"gen {link_gen} x{g.link_width_current}"
    expect_none_bad("GPU PCIe link", bad, f"gen {gen} x{width}", hint("pcie_hw", node.name))


@pytest.mark.applies(lambda n: n.nvswitch)
def test_fabric_manager(node: NodeExpect, probe: Probe) -> None:
    state = probe.run(FABRICMANAGER, ok=(0, 3, 4)).strip()
    expect_equal(
        "nvidia-fabricmanager.service", "active", state or "<unknown>", hint("fabricmanager", node.name)
    )
    bad = {
        g.bus_id: f"{g.fabric_state}/{g.fabric_status}"
        for g in gpus(probe)
        if g.fabric_state != "Completed" or g.fabric_status != "Success"
    }
    expect_none_bad("GPU fabric state", bad, "Completed/Success", hint("fabricmanager", node.name))


def test_mig(node: NodeExpect, probe: Probe) -> None:
    want = "Enabled" if node.tuning.get("mig") else "Disabled"
    bad = {
        g.bus_id: f"{g.mig_mode_current}/{g.mig_mode_pending}"
        for g in gpus(probe)
        if g.mig_mode_current not in (want, None) or g.mig_mode_pending not in (want, None)
    }
    expect_none_bad("MIG mode", bad, f"{want} (current/pending)", hint("mig", node.name))


def test_clock_events(node: NodeExpect, probe: Probe) -> None:
    missing = [g.bus_id for g in gpus(probe) if not g.clock_event_reasons]
    if missing:
        raise CheckError(f"nvidia-smi -q shows no clock event reasons for {', '.join(missing)}")
    bad = {
        g.bus_id: "+".join(r for r in g.active_clock_event_reasons if r not in BENIGN_CLOCK_REASONS)
        for g in gpus(probe)
    }
    bad = {k: v for k, v in bad.items() if v}
    expect_none_bad(
        "active clock event reasons",
        bad,
        "none beyond " + " / ".join(sorted(BENIGN_CLOCK_REASONS)),
        hint("gpu_hw", node.name),
    )


@pytest.mark.applies(lambda n: bool(n.desired["pcie"]["acs_disable"]))
def test_acs(node: NodeExpect, probe: Probe) -> None:
    """PCIe ACS is off on the bridges between the GPUs and NICs, so GPUDirect peer-to-peer traffic is not
    redirected through the root complex (the nvidia_gpu role's clusterforge-acs lists the bridges that still
    have it, or "none")."""
    listed = probe.run(ACS_STATUS).split()
    bad = [b for b in listed if b != "none"]
    expect(
        bool(listed),
        "clusterforge-acs --status",
        "a bridge list or none",
        "no output",
        hint("acs", node.name),
    )
    expect_none_bad(
        "PCIe bridges with ACS enabled",
        bad,
        "none (ACSCtl 0000 on every GPU/NIC bridge)",
        hint("acs", node.name),
    )
