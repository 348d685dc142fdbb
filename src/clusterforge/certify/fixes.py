"""Fix hints: which role and tag set each checked setting, and what to do about hardware faults.

Failure messages name these (``run `clusterforge provision --tags TAG --limit NODE` (role ROLE)``), so a
tag renamed in a role must be renamed here too; ``tests/unit/validators`` checks every tag exists in the
roles once they are present.
"""

from __future__ import annotations

from clusterforge.certify.checks import Fix

FIXES: dict[str, Fix] = {
    # os_tuning
    "cmdline": Fix("os_tuning", "cmdline", "reboot the node afterwards (drained) to boot with it"),
    "cstates": Fix("os_tuning", "cstates"),
    "governor": Fix("os_tuning", "governor"),
    "hugepages": Fix("os_tuning", "hugepages", "reboot the node afterwards (boot-time pages)"),
    "thp": Fix("os_tuning", "thp"),
    "numa_balancing": Fix("os_tuning", "sysctl"),
    "sysctl": Fix("os_tuning", "sysctl"),
    "memlock": Fix("os_tuning", "limits"),
    "irqbalance": Fix("os_tuning", "irqbalance"),
    "time": Fix("os_tuning", "timesync"),
    "tuned": Fix("os_tuning", "tuned"),
    "iommu": Fix("os_tuning", "iommu", "reboot the node afterwards (drained) to boot with it"),
    # nvidia_gpu
    "driver": Fix("nvidia_gpu", "gpu_driver"),
    "cuda": Fix("nccl", "nccl"),
    "dcgm": Fix("nvidia_gpu", "dcgm"),
    "persistence": Fix("nvidia_gpu", "persistenced"),
    "ecc_mode": Fix("nvidia_gpu", "ecc", "a GPU reset or reboot applies a pending ECC mode"),
    "mig": Fix("nvidia_gpu", "mig"),
    "acs": Fix("nvidia_gpu", "acs"),
    "fabricmanager": Fix("nvidia_gpu", "fabricmanager"),
    "peermem": Fix("nvidia_gpu", "peermem"),
    "power_cap": Fix(
        action="lift the power cap (`nvidia-smi -pl <limit>`, or the site tool or BMC policy that set it); "
        "if the cap is intended, declare it as the SKU's gpu.power_limit_w"
    ),
    "vbios": Fix(action="flash the pinned VBIOS with the vendor's tool, then re-certify"),
    # system firmware: no clusterforge role flashes it
    "bios_version": Fix(
        action="update the system BIOS to the pinned version (the vendor's tool or the BMC's Redfish "
        "UpdateService), reboot the node (drained), then re-certify"
    ),
    # rdma
    "rdma_core": Fix("rdma", "rdma_packages"),
    "rdma_stack": Fix("rdma", "rdma_packages"),
    "nic_firmware": Fix(action="flash the pinned firmware (mlxfwmanager / mlxfwreset), then re-certify"),
    "roce_qos": Fix("rdma", "roce_qos"),
    "rdma_netdev": Fix("rdma", "network"),
    # storage
    "storage_mounts": Fix("storage", "storage_mounts", "check the server and the storage network"),
    "storage_scratch": Fix("storage", "storage_scratch"),
    "storage_space": Fix(action="free space on the filesystem or grow it (the floor is min_free_gib)"),
    "storage_nics": Fix("storage", "storage_nics", "check the cable and switch port if the link is down"),
    "storage_lnet": Fix("storage", "storage_lnet", "reload the lnet module (unmount Lustre first) or reboot"),
    "storage_gds": Fix("storage", "storage_gds"),
    "storage_perf": Fix(
        action="re-run in a quiet window; if it stays low, check the devices (nvme smart-log), the RAID "
        "members, the storage network and the servers"
    ),
    # management network: the site's OS installer configures it (no role rewrites what clusterforge
    # connects over); <gw> and <netdev> are filled in by validators/test_network.py
    "mgmt_link": Fix(
        action="degraded management link: check the cable, the transceiver and the switch port "
        "(`ethtool <netdev>`, the switch's port status and logs); replace the cable or optic"
    ),
    "mgmt_config": Fix(
        action="the OS installer's network config (netplan/NetworkManager/systemd-networkd) must set the "
        "management netdev's MTU to the plan's (fabrics.management.mtu); clusterforge does not rewrite the "
        "management network it connects over"
    ),
    "mgmt_route": Fix(
        action="the OS installer's network config (netplan/NetworkManager/systemd-networkd) must route via "
        "<gw> on <netdev>; clusterforge does not rewrite the management network it connects over"
    ),
    # nccl
    "nccl": Fix("nccl", "nccl"),
    # benchmarks (nccl-tests, nvbandwidth)
    "benchmarks": Fix("benchmarks", "benchmarks"),
    # exporters and the passive health check
    "monitoring": Fix("monitoring", "monitoring"),
    # hardware: nothing to re-apply
    "gpu_hw": Fix(
        action="drain the node, reset the GPU (`nvidia-smi -r`) or reboot; RMA the GPU if it recurs"
    ),
    "gpu_missing": Fix(
        action="reseat or replace the GPU (check `lspci` and the BMC log); RMA if it stays lost"
    ),
    "nvlink_hw": Fix(action="reset the GPUs/NVSwitch (reboot); check the baseboard; RMA if links stay down"),
    "pcie_hw": Fix(
        action="reseat the GPU/NIC, check the riser and BIOS PCIe settings; RMA if it stays degraded"
    ),
    "link_hw": Fix(
        action="check the cable/transceiver and the switch port (`ibstat`, switch logs); replace the "
        "cable or optic"
    ),
    "nic_hw": Fix(action="reseat or replace the NIC; check `lspci` and `dmesg` for mlx5 errors"),
    "perf": Fix(
        action="re-run in a quiet window; if it stays low, drain and investigate (clocks, thermals, "
        "PCIe, cabling)"
    ),
    "topology": Fix(action="the SKU does not match this hardware: fix the catalog entry or the node's pool"),
}


def hint(key: str, node: str) -> str:
    """The rendered fix for ``key`` on ``node``."""
    return FIXES[key].render(node)
