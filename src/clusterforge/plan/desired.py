"""The compiled desired state of a node: every setting the roles apply and the validators certify.

Computed once, here, from what the node's expectation digest covers (its SKU and the cluster's tuning);
written into plan.json under each node (`desired`) for the validators and drift, and into the inventory
(`clusterforge_desired`) for the roles. Neither side derives these values again.

Pure and deterministic: plain JSON types only (strings for values that a kernel file shows), so the
canonical JSON of a node's desired state is stable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterforge.plan.desired_counters import counters_desired
from clusterforge.plan.desired_fabric import lldp_desired
from clusterforge.plan.desired_monitoring import monitoring_desired
from clusterforge.plan.desired_network import management_desired
from clusterforge.plan.desired_software import software_desired
from clusterforge.plan.desired_storage import storage_desired
from clusterforge.plan.desired_version import DESIRED_VERSION

# IPoIB datagram mode: the 4096-byte IB MTU less the 4-byte IPoIB encapsulation header (the netdev MTU).
IPOIB_MTU = 4092
# The verbs port MTU (ibv_devinfo active_mtu) of an InfiniBand port: NDR/HDR's 4K MTU.
IB_PORT_MTU = 4096
# RoCE: the kernel takes the IB MTU that fits the netdev MTU less the RoCE headers (GRH 40 + UDP 8 + BTH 12
# + XRC 4 + AtomicETH 28 + ICRC 4 = 96 bytes, include/rdma/ib_addr.h iboe_get_mtu).
ROCE_HEADER_BYTES = 96
IB_MTUS = (4096, 2048, 1024, 512, 256)
# RDMA-CM's default RoCE mode for rdma_cm connections (configfs default_roce_mode).
ROCE_MODE = "RoCE v2"
# Where a driver exposes the CNP DSCP / 802.1p priority of a RoCE port: MLNX_OFED/DOCA's ECN sysfs, then
# the upstream mlx5 debugfs congestion-control parameters. First existing path wins.
CNP_DSCP_PATHS = (
    "/sys/class/net/{netdev}/ecn/roce_np/cnp_dscp",
    "/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_dscp",
)
CNP_PRIO_PATHS = (
    "/sys/class/net/{netdev}/ecn/roce_np/cnp_802p_prio",
    "/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_prio",
)

HUGE_KB = {"1G": 1048576, "2M": 2048}

# Sysctls every node gets (tuning-facts §2, §4); kernel.numa_balancing is added from tuning.numa_balancing.
SYSCTLS: dict[str, str] = {
    "net.core.rmem_max": "268435456",
    "net.core.wmem_max": "268435456",
    "net.core.rmem_default": "16777216",
    "net.core.wmem_default": "16777216",
    "net.ipv4.tcp_rmem": "4096 87380 268435456",
    "net.ipv4.tcp_wmem": "4096 65536 268435456",
    "net.ipv4.tcp_mtu_probing": "1",
    "vm.zone_reclaim_mode": "0",
    "vm.swappiness": "10",
    "vm.max_map_count": "1048576",
}

# Kernel parameters the os_tuning role owns: on the running command line but not desired -> stale.
CMDLINE_MANAGED_KEYS = (
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "iommu",
    "intel_iommu",
    "iommu.passthrough",
    "default_hugepagesz",
    "hugepagesz",
    "hugepages",
)


def cpu_vendor(sku: dict[str, Any]) -> str:
    """intel | amd | arm | other, from the SKU's declared CPU (never from the node)."""
    vendor = str(sku.get("cpu", {}).get("vendor", "")).lower()
    return vendor if vendor in ("intel", "amd", "arm") else "other"


def numa_nodes(sku: dict[str, Any]) -> int:
    return max(int(sku.get("cpu", {}).get("numa_nodes", 1)), 1)


def hugepages(tuning: dict[str, Any], numa: int) -> dict[str, Any]:
    """Boot-time hugepages: the total, and with per_numa on a multi-NUMA SKU the count on each NUMA node
    (the total split evenly, the first nodes taking one more when it does not divide)."""
    hp = tuning["hugepages"]
    size, total = str(hp["size"]), int(hp["count"])
    per_numa = None
    if total and hp.get("per_numa") and numa > 1:
        per_numa = {str(i): total // numa + (1 if i < total % numa else 0) for i in range(numa)}
    return {"size": size, "size_kb": HUGE_KB[size], "total": total, "per_numa": per_numa}


def hugepages_param(hp: dict[str, Any]) -> str:
    """The value of ``hugepages=``: the total, or ``0:N0,1:N1`` per NUMA node."""
    per = hp["per_numa"]
    if not per:
        return str(hp["total"])
    return ",".join(f"{i}:{per[i]}" for i in sorted(per, key=int))


def kernel_cmdline(tuning: dict[str, Any], vendor: str, hp: dict[str, Any]) -> list[str]:
    """The parameters the os_tuning role puts on the kernel command line, in order: the C-state limit
    (Intel: intel_idle off and acpi_idle limited, tuning-facts §1.1), the IOMMU mode (§5.2) and boot-time
    hugepages (§2.1). processor.max_cstate=0 means 1 to the kernel, so it is never below 1.

    arm64 (the kernel's kernel-parameters.txt): no ACPI processor idle parameter (the C-state limit is the
    role's cpuidle sysfs setting alone) and the IOMMU mode is `iommu.passthrough=1|0`; `iommu=off` does not
    exist there (spec/checks rejects it)."""
    iommu = str(tuning["iommu"])
    if vendor == "arm":
        if iommu == "off":
            raise ValueError("tuning.iommu off: arm64 kernels have no iommu=off")
        out = [f"iommu.passthrough={1 if iommu == 'pt' else 0}"]
    else:
        out = ["intel_idle.max_cstate=0"] if vendor == "intel" else []
        out.append(f"processor.max_cstate={max(int(tuning['cstate_max']), 1)}")
        out += {
            "pt": ["iommu=pt"],
            "on": ["iommu=nopt"] + (["intel_iommu=on"] if vendor == "intel" else []),
            "off": ["iommu=off"],
        }[iommu]
    if hp["total"]:
        out += [
            f"default_hugepagesz={hp['size']}",
            f"hugepagesz={hp['size']}",
            f"hugepages={hugepages_param(hp)}",
        ]
    return out


def sysctls(tuning: dict[str, Any]) -> dict[str, str]:
    out = dict(SYSCTLS)
    out["kernel.numa_balancing"] = "1" if tuning["numa_balancing"] else "0"
    return dict(sorted(out.items()))


def port_mtu(link_layer: str, netdev_mtu: int) -> int:
    """The verbs active_mtu a port reaches: 4096 on InfiniBand; on RoCE the largest IB MTU that fits the
    netdev MTU less the RoCE headers."""
    if link_layer == "InfiniBand":
        return IB_PORT_MTU
    room = netdev_mtu - ROCE_HEADER_BYTES
    return next((m for m in IB_MTUS if m <= room), IB_MTUS[-1])


def roce_qos(tuning: dict[str, Any]) -> dict[str, Any]:
    """A RoCE rail's lossless QoS (tuning-facts §3): trust DSCP, PFC on the lossless priority only, the
    RoCE and CNP DSCPs mapped to their priorities (``dscp2prio``: only these two entries are set), ECN on
    the lossless priority, the CNP DSCP and 802.1p priority, the RDMA-CM default ToS and RoCE mode."""
    q = tuning["roce"]
    prio, cnp_prio = int(q["lossless_priority"]), int(q["cnp_priority"])
    dscp, cnp_dscp = int(q["dscp"]), int(q["cnp_dscp"])
    return {
        "trust": "dscp",
        "pfc_priorities": [prio],
        "pfc_vector": [1 if p == prio else 0 for p in range(8)],
        "lossless_priority": prio,
        "dscp": dscp,
        "cnp_dscp": cnp_dscp,
        "cnp_priority": cnp_prio,
        "dscp2prio": {str(d): p for d, p in sorted({dscp: prio, cnp_dscp: cnp_prio}.items())},
        "ecn": bool(q["ecn"]),
        "tos": int(q["tos"]),
        "roce_mode": ROCE_MODE,
    }


def netdev_mtu(link_layer: str, tuning: dict[str, Any]) -> int:
    """The MTU of a rail netdev: the spec's RoCE MTU on Ethernet, the IPoIB datagram MTU on InfiniBand."""
    return int(tuning["roce"]["mtu"]) if link_layer == "Ethernet" else IPOIB_MTU


def rdma_desired(software: dict[str, Any] | None) -> dict[str, Any]:
    """The RDMA stack (``software.rdma``) and the tool that applies and reads RoCE QoS with it: mlnx_qos
    (mlnx-tools) on DOCA-OFED, iproute2's ``dcb`` on the distribution's inbox rdma-core. Also where the
    drivers expose the CNP DSCP / 802.1p priority, first existing path wins (``{netdev}``, ``{pci}``
    substituted): the role writes and the validator reads the same files."""
    rdma = (software or {}).get("rdma") or {}
    stack = "doca-ofed" if rdma.get("stack") == "doca-ofed" else "inbox"
    return {
        "stack": stack,
        "version": str(rdma.get("version") or ""),
        "qos_tool": "mlnx_qos" if stack == "doca-ofed" else "dcb",
        "cnp_dscp_paths": list(CNP_DSCP_PATHS),
        "cnp_prio_paths": list(CNP_PRIO_PATHS),
    }


#: the kernel modules the roles load now and at every boot: (module, its modules-load.d file, role)
PEERMEM = ("nvidia_peermem", "/etc/modules-load.d/nvidia-peermem.conf", "nvidia_gpu")
RDMA_CM = ("rdma_cm", "/etc/modules-load.d/clusterforge-rdma.conf", "rdma")


def modules_desired(rails: list[dict[str, Any]], storage: dict[str, Any] | None) -> list[dict[str, str]]:
    """The modules the roles make resident: nvidia_peermem (GPUDirect RDMA, every GPU node), rdma_cm where
    RoCE QoS is applied (its configfs holds the RDMA-CM default ToS: RoCE rails or lossless storage NICs),
    nvidia-fs where GPUDirect Storage is declared (the storage state's `gds.module`). ``sysfs``: the name
    under /sys/module ('-' is '_')."""
    picked = [PEERMEM]
    storage_qos = bool(((storage or {}).get("nics") or {}).get("qos"))
    if any(r["link_layer"] == "Ethernet" for r in rails) or storage_qos:
        picked.append(RDMA_CM)
    out = [
        {"name": name, "sysfs": name.replace("-", "_"), "boot_file": path, "role": role}
        for name, path, role in picked
    ]
    gds = (storage or {}).get("gds") or {}
    return out + ([dict(gds["module"])] if gds.get("enabled") else [])


def rail_desired(
    rail: dict[str, Any], tuning: dict[str, Any], qos: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A rail's desired state; ``qos``: the node's `roce_qos` (computed once per node), else computed here."""
    ethernet = rail["link_layer"] == "Ethernet"
    mtu = netdev_mtu(rail["link_layer"], tuning)
    return {
        "index": int(rail["index"]),
        "netdev": rail["netdev"],
        "hca": rail["hca"],
        "port": int(rail.get("port", 1)),
        "link_layer": rail["link_layer"],
        "netdev_mtu": mtu,
        "port_mtu": port_mtu(rail["link_layer"], mtu),
        "qos": (qos if qos is not None else roce_qos(tuning)) if ethernet else None,
    }


def node_desired(
    sku: dict[str, Any],
    tuning: dict[str, Any],
    rails: list[dict[str, Any]],
    software: dict[str, Any] | None = None,
    storage: dict[str, Any] | None = None,
    *,
    monitoring: Mapping[str, Any],
    link_counters: Mapping[str, Any],
    management: Mapping[str, Any],
) -> dict[str, Any]:
    """The desired state of a node of ``sku`` (the plan's SKU entry) with ``rails`` (its plan rails, or the
    SKU's rails: only index, netdev, hca, port and link_layer are read) under the cluster's ``tuning`` and
    ``software`` pins (the RDMA stack; the pins and packages of `desired_software`); ``storage``:
    desired_storage.storage_input;
    ``monitoring``: desired_monitoring.monitoring_input; ``link_counters``: desired_counters.counters_input
    (the SKU entry's name and compute NICs' link layer are read with it); ``management``:
    desired_network.management_input (read with the SKU entry's management NIC)."""
    vendor = cpu_vendor(sku)
    hp = hugepages(tuning, numa_nodes(sku))
    qos = roce_qos(tuning)  # once: the RoCE rails and lossless storage NICs carry this same policy
    storage_state = storage_desired(sku, storage, qos)
    return {
        "version": DESIRED_VERSION,
        "kernel": {"cmdline": kernel_cmdline(tuning, vendor, hp), "managed_keys": list(CMDLINE_MANAGED_KEYS)},
        "cpu": {
            "vendor": vendor,
            "cstate_max": int(tuning["cstate_max"]),
            "governor": str(tuning["governor"]),
        },
        "hugepages": hp,
        "thp": str(tuning["thp"]),
        "sysctls": sysctls(tuning),
        "limits": {
            "memlock_login": {"soft": "unlimited", "hard": "unlimited"},
            "memlock_systemd": "infinity",
        },
        "services": {
            "irqbalance": bool(tuning["irqbalance"]),
            "tuned_profile": tuning.get("tuned_profile") or None,
        },
        "pcie": {"acs_disable": bool(tuning["acs_disable"])},
        "time": {"servers": [str(s) for s in tuning.get("time_servers", ())]},
        "rdma": rdma_desired(software),
        "software": software_desired(software, sku),
        "rails": [rail_desired(r, tuning, qos) for r in sorted(rails, key=lambda r: int(r["index"]))],
        "lldp": lldp_desired(sku, rails),
        "monitoring": monitoring_desired(sku, rails, monitoring),
        "storage": storage_state,
        "modules": modules_desired(rails, storage_state),
        "link_counters": counters_desired(sku, link_counters),
        "management": management_desired(sku, management),
    }
