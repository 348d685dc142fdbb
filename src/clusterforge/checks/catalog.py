"""Every check clusterforge knows: the validators, the burn-in tests and the passive checks.

Ids: a validator's is `<area>.<check>` as `certify.plugin.check_id` forms it, without the parameter suffix
(`rdma.port[rail0]` → `rdma.port`); a burn-in test's is the one `burnin.issue` records (`burnin.<test>`,
`burnin.ecc`, `burnin.link_errors`); passive checks are `passive.*`. Facts taken from elsewhere name their
source in `refs` (keys of `REFS`); numbers without a source are clusterforge's own policy and say so.
"""

from __future__ import annotations

from clusterforge.checks.catalog_network import NETWORK
from clusterforge.checks.catalog_storage import STORAGE
from clusterforge.checks.model import Action, Check, Severity, validator_check
from clusterforge.checks.passive import PASSIVE

REFS: dict[str, str] = {
    "nv-hv-xid": "NVIDIA Health Validation, Xid checks "
    "(docs.nvidia.com/health-validation/reference/checks/xid.md): Xid checks are PASSIVE, CONTINUOUS; "
    "e.g. Xid 46 and Xid 48 are CRITICAL with recommended action `drain: reset_gpu → service_required`",
    "nv-xid-catalog": "NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): "
    "per Xid a resolution bucket for the immediate and the investigatory action",
    "gpud": "leptonai/gpud components/accelerator/nvidia: Xid 79 and a lost GPU → REBOOT_SYSTEM; pending "
    "row remapping 'requires GPU reset or system reboot'; remapping failed → HARDWARE_INSPECTION",
    "xid-policy": "clusterforge certify/xid_policy.yaml (the class of each Xid, with its own sources: "
    "AzNHC, NVIDIA k8s-device-plugin, GCM, imbue, DeepOps, the Xid catalog)",
    "nvsentinel": "NVIDIA NVSentinel (github.com/NVIDIA/NVSentinel): repeat-offender rules on the same "
    "fatal Xid within 24 h and link flap detection, as issue 21 describes them "
    "(not checked against its source)",
    "dcgm-fields": "NVIDIA/DCGM testing/python3/dcgm_fields.py: DCGM_FI_DEV_ROW_REMAP_PENDING (396), "
    "DCGM_FI_DEV_ROW_REMAP_FAILURE (395)",
    "own": "clusterforge's own policy (no outside source): thresholds chosen to be conservative",
}

_HW_GPU = ("gpu",)


_v = validator_check

_HW = "hardware: replace the part or open a service ticket"
_FULL = ("full", "burnin")

VALIDATORS: tuple[Check, ...] = (
    _v("bios.bios_attributes", "BIOS attributes as declared (Redfish)", tiers=("full",)),
    _v("gpu.count", "GPU count as declared", severity="critical", remedies=("reboot", "service"), fix=_HW),
    _v("gpu.model", "GPU model as declared", severity="critical", action="service", fix=_HW),
    _v("gpu.memory", "GPU memory size as declared", severity="critical", action="service", fix=_HW),
    _v(
        "gpu.power_limit",
        "enforced GPU power limit as declared (no cap below the SKU's)",
        fix="lift the cap (`nvidia-smi -pl`, or the site tool or BMC policy that set it); if the cap is "
        "intended, declare it as the SKU's gpu.power_limit_w",
    ),
    _v("gpu.driver_branch", "NVIDIA driver branch as declared"),
    _v("gpu.persistence_mode", "persistence mode on"),
    _v("gpu.ecc_mode", "ECC mode as declared", remedies=("reboot",)),
    _v(
        "gpu.remapped_rows",
        "no pending row remap, no remap failure",
        severity="critical",
        remedies=("reset_gpu", "service"),
        fix="reset the GPU to apply a pending remap; a remap failure is a hardware service",
        refs=("gpud", "dcgm-fields"),
    ),
    _v(
        "gpu.ecc_errors",
        "ECC error counters within the SKU thresholds",
        severity="critical",
        remedies=("reset_gpu", "service"),
        fix=_HW,
    ),
    _v(
        "gpu.xid",
        "no fatal Xid since boot (xid_policy.yaml)",
        severity="critical",
        remedies=("reset_gpu", "service"),
        fix="reset the GPU or reboot; a repeat is a hardware service",
        refs=("xid-policy", "nv-hv-xid"),
    ),
    _v(
        "gpu.nvlink",
        "every NVLink up at its speed",
        severity="critical",
        remedies=("reset_gpu", "service"),
        fix=_HW,
    ),
    _v("gpu.topology", "GPU/NIC PCIe topology as declared", severity="critical", action="service", fix=_HW),
    _v("gpu.pcie", "PCIe link width and generation as declared", remedies=("reboot", "service"), fix=_HW),
    _v(
        "gpu.fabric_manager",
        "NVIDIA fabric manager running (NVSwitch systems)",
        severity="critical",
        remedies=("reboot",),
    ),
    _v("gpu.mig", "MIG mode as declared"),
    _v("gpu.clock_events", "no thermal/power-brake clock events", remedies=("service",), fix=_HW),
    _v("inventory.parts", "GPU and NIC serials as last certified", tiers=("quick", "full", "burnin")),
    _v("nccl.conf", "/etc/nccl.conf as declared"),
    _v("os_tuning.cmdline", "kernel command line as declared", remedies=("reboot",)),
    _v("os_tuning.cstates", "C-states as declared", severity="minor"),
    _v("os_tuning.governor", "CPU frequency governor as declared", severity="minor"),
    _v("os_tuning.hugepages", "huge pages as declared", severity="minor"),
    _v("os_tuning.thp", "transparent huge pages as declared", severity="minor"),
    _v(
        "os_tuning.sysctls",
        "every declared sysctl (NUMA balancing, memory, network) as declared",
        severity="minor",
    ),
    _v("os_tuning.memlock_login", "memlock limit for login sessions"),
    _v("os_tuning.memlock_systemd", "memlock limit for systemd services"),
    _v("os_tuning.irqbalance", "irqbalance as declared", severity="minor"),
    _v("os_tuning.tuned_profile", "tuned profile as declared", severity="minor"),
    _v(
        "performance.dcgm_diag",
        "DCGM diagnostics pass at the policy's level",
        tiers=_FULL,
        severity="critical",
        cost="moderate",
        remedies=("reset_gpu", "service"),
        fix=_HW,
    ),
    _v(
        "performance.nvbandwidth", "nvbandwidth H2D/D2H/D2D above the SKU floor", tiers=_FULL, cost="moderate"
    ),
    _v(
        "performance.ib_write_bw",
        "GPUDirect ib_write_bw per rail above the SKU floor",
        tiers=_FULL,
        cost="moderate",
        remedies=("service",),
        ticket="cable",
        fix="reseat or replace the rail's cable or transceiver",
    ),
    _v(
        "performance.all_reduce",
        "single-node all_reduce busbw above the SKU floor",
        tiers=_FULL,
        cost="moderate",
    ),
    _v("rdma.hca", "HCA present per rail", severity="critical", remedies=("service",), fix=_HW),
    _v(
        "rdma.port",
        "rail port active at its rate",
        severity="critical",
        remedies=("service",),
        ticket="cable",
        fix="reseat or replace the rail's cable or transceiver",
    ),
    _v(
        "rdma.error_counters",
        "rail port error counters within limits",
        remedies=("service",),
        ticket="cable",
        fix="check the cable, transceiver and switch port",
    ),
    _v(
        "link_counters.rates",
        "rail link-health counters (IB port counters, RoCE hw_counters and ethtool -S pause/discards on the "
        "lossless priority) not rising faster than the node's limits over a window (plan.json desired "
        "link_counters: counter_policy.yaml and the spec's certification.link_counters)",
        tiers=("full",),
        remedies=("service",),
        ticket="cable",
        fix="reseat or replace the rail's cable or optic, and check the switch port at its far end (a PFC "
        "storm: its pause counters and both ends' lossless QoS)",
    ),
    _v("rdma.netdev", "rail netdev as declared"),
    _v(
        "cabling.rail_neighbour",
        "rail cabled to the planned leaf and port (LLDP on RoCE, SMP far-end reads on InfiniBand)",
        severity="critical",
        ticket="cable",
        fix="move the rail cables as the message says (both ends from cables.csv), then re-certify",
    ),
    _v("rdma.active_mtu", "rail active MTU as declared"),
    _v("rdma.numa", "rail NIC on the declared NUMA node", action="service", fix=_HW),
    _v("rdma.peermem", "nvidia_peermem loaded"),
    _v("rdma.iommu", "IOMMU mode as declared", remedies=("reboot",)),
    _v("rdma.roce_qos", "RoCE trust, PFC and DSCP->priority as declared (mlnx_qos or dcb)"),
    _v("rdma.roce_ecn", "RoCE ECN as declared"),
    _v("rdma.roce_cnp", "RoCE CNP DSCP and 802.1p priority as declared"),
    _v("rdma.roce_gid", "RoCE GID as declared"),
    _v("rdma.roce_tos", "RoCE ToS as declared"),
    _v("rdma.qos_unit", "the RoCE QoS unit is installed and ran"),
    _v(
        "modules.resident",
        "kernel modules the roles load (peermem, rdma_cm, nvidia-fs) loaded and listed for boot",
    ),
    _v("software.driver", "NVIDIA driver version as declared"),
    _v("software.driver_packages", "driver (and fabric manager) packages at the plan's version and epoch"),
    _v("software.cuda", "CUDA version as declared"),
    _v("software.nccl", "NCCL packages at the plan's version"),
    _v("software.dcgm", "DCGM packages (core + CUDA plugin) at the plan's version and epoch"),
    _v("software.rdma", "RDMA stack (OFED/DOCA) version as declared"),
    _v("benchmarks.tool", "benchmark tools (nccl-tests, nvbandwidth) installed at the pinned version"),
    _v(
        "monitoring.exporter",
        "node-exporter (textfile collector on) and dcgm-exporter answer and expose the plan's series",
        severity="minor",
    ),
    _v("monitoring.health_check", "the passive health check is installed and runs", severity="minor"),
    _v("gpu.acs", "PCIe ACS disabled on the bridges between GPUs and NICs (GPUDirect RDMA peer traffic)"),
    _v("software.nic_firmware", "NIC firmware version as declared"),
    _v("software.vbios", "GPU VBIOS version as declared", action="service", fix=_HW),
    _v(
        "software.bios",
        "system BIOS version as declared (the BMC's Redfish BiosVersion, read from the controller)",
        action="service",
        fix="update the system BIOS with the vendor's tool or the BMC's UpdateService, then re-certify",
    ),
    _v("software.time_sync", "clock synchronised", severity="minor", fix="fix chrony/NTP, then re-certify"),
)


def _b(
    cid: str, title: str, *, severity: Severity = "major", remedies: tuple[Action, ...] = (), ticket: str = ""
) -> Check:
    return Check(
        cid,
        title,
        "burnin",
        severity,
        "active",
        "expensive",
        "drain",
        remedies,
        tiers=("burnin",),
        ticket=ticket,
        fix="the burn-in finding names the component; replace it or open a service ticket",
    )


BURNIN: tuple[Check, ...] = (
    _b(
        "burnin.dcgm.diag",
        "DCGM diagnostics pass every iteration",
        severity="critical",
        remedies=("service",),
    ),
    _b("burnin.nvbandwidth.h2d", "host→device bandwidth within its fleet"),
    _b("burnin.nvbandwidth.d2h", "device→host bandwidth within its fleet"),
    _b("burnin.nvbandwidth.d2d", "device↔device bandwidth within its fleet"),
    _b("burnin.ib_write_bw.loopback", "GPUDirect loopback per rail within its fleet", ticket="cable"),
    _b("burnin.ib_write_bw.pair", "node-pair bandwidth per rail within its fleet", ticket="cable"),
    _b("burnin.all_reduce.node", "single-node all_reduce within its fleet"),
    _b("burnin.all_reduce.group", "group all_reduce within its fleet"),
    _b("burnin.fio.seq_read", "fio sequential read per storage target within its fleet, above its floor"),
    _b("burnin.fio.seq_write", "fio sequential write per storage target within its fleet, above its floor"),
    _b("burnin.ecc", "no ECC counter growth during the run", severity="critical", remedies=("service",)),
    _b("burnin.link_errors", "no rail link error counter growth during the run", ticket="cable"),
)


ALL: tuple[Check, ...] = VALIDATORS + NETWORK + STORAGE + BURNIN + PASSIVE
