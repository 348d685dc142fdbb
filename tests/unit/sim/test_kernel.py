"""Kernel views: the real paths, boot-time semantics (cmdline, hugepages, sysctl, modules)."""

from __future__ import annotations

from clusterforge.hw import procfs, xid
from clusterforge.plan.desired import CNP_DSCP_PATHS, CNP_PRIO_PATHS

from .conftest import SimNode


def test_cmdline_and_hugepages_only_after_reboot(node: SimNode) -> None:
    assert "intel_idle.max_cstate" not in node.read("/proc/cmdline")
    node.write("/etc/default/grub", 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n')
    node.write(
        "/etc/default/grub.d/90-clusterforge.cfg",
        'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1 '
        "processor.max_cstate=1 iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=16 "
        'transparent_hugepage=never"\n',
    )
    node.ok("update-grub")
    assert "intel_idle.max_cstate=1" in node.read("/boot/grub/grub.cfg")
    assert "intel_idle.max_cstate=1" not in node.read("/proc/cmdline")  # not before the reboot
    assert procfs.parse_meminfo(node.read("/proc/meminfo")).hugepages_total == 0
    node.reboot()
    cmdline = node.read("/proc/cmdline")
    assert cmdline.startswith("BOOT_IMAGE=/boot/vmlinuz-") and "root=UUID=" in cmdline
    assert "intel_idle.max_cstate=1" in cmdline and "hugepages=16" in cmdline
    mi = procfs.parse_meminfo(node.read("/proc/meminfo"))
    assert mi.hugepages_total == 16 and mi.hugepagesize_kb == 1048576
    assert node.read("/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages").strip() == "16"
    assert node.read("/sys/module/intel_idle/parameters/max_cstate").strip() == "1"
    states = sorted(p.name for p in (node.root / "sys/devices/system/cpu/cpu0/cpuidle").iterdir())
    assert states == ["state0", "state1"]  # POLL and C1 only
    assert node.read("/sys/kernel/mm/transparent_hugepage/enabled").strip() == "always madvise [never]"


def test_cpu_views(node: SimNode) -> None:
    cpu0 = "/sys/devices/system/cpu/cpu0"
    assert node.read("/sys/devices/system/cpu/cpuidle/current_driver").strip() == "intel_idle"
    names = [node.read(f"{cpu0}/cpuidle/state{i}/name").strip() for i in range(4)]
    assert names == ["POLL", "C1", "C1E", "C6"]
    assert node.read(f"{cpu0}/cpufreq/scaling_governor").strip() == "powersave"
    assert "performance" in node.read(f"{cpu0}/cpufreq/scaling_available_governors")


def test_sysctl_applied_at_boot(node: SimNode) -> None:
    assert node.read("/proc/sys/kernel/numa_balancing").strip() == "1"
    node.write("/etc/sysctl.d/90-tuning.conf", "kernel.numa_balancing = 0\nvm.swappiness=10\n# c\n")
    node.reboot()
    assert node.read("/proc/sys/kernel/numa_balancing").strip() == "0"
    assert node.read("/proc/sys/vm/swappiness").strip() == "10"
    assert node.read("/proc/sys/vm/max_map_count").strip() == "65530"


def test_host_global_net_core_sysctls_are_simulated(node: SimNode) -> None:
    """net.core.{r,w}mem_* are host-global (read-only from a container): simulated, so a declared value
    takes effect in the lab like any other key, and certification can check it."""
    assert node.read("/proc/sys/net/core/rmem_max").strip() == "212992"
    node.write("/etc/sysctl.d/90-clusterforge.conf", "net.core.rmem_max = 268435456\n")
    node.reboot()
    assert node.read("/proc/sys/net/core/rmem_max").strip() == "268435456"
    assert node.read("/proc/sys/net/core/wmem_max").strip() == "212992"


def test_modules(node: SimNode) -> None:
    mods = node.read("/proc/modules")
    assert "mlx5_ib " in mods and "nvidia_uvm " in mods and "nvidia_peermem" not in mods
    assert not (node.root / "sys/module/nvidia_peermem").exists()
    node.ok("modprobe", "nvidia-peermem")
    assert "nvidia_peermem 16384 0 - Live" in node.read("/proc/modules")
    assert node.read("/sys/module/nvidia_peermem/version").strip() == "570.133.20"
    rc, _, err = node.run("modprobe", "-r", "nvidia")
    assert rc == 1 and "in use" in err
    node.ok("rmmod", "nvidia_peermem")
    assert not (node.root / "sys/module/nvidia_peermem").exists()
    node.write("/etc/modules-load.d/nvidia-peermem.conf", "nvidia-peermem\n")
    node.reboot()
    assert (node.root / "sys/module/nvidia_peermem/initstate").exists()
    node.install("nvidia-driver", None)
    node.reboot()
    assert "nvidia" not in node.read("/proc/modules")
    rc, _, err = node.run("modprobe", "nvidia")
    assert rc == 1 and "not found" in err


def _dev(node: SimNode) -> list[str]:
    return sorted(f.name for f in (node.root / "dev").glob("nvidia*"))


def test_gpu_device_nodes_follow_the_driver_and_the_gpus_it_found(node: SimNode) -> None:
    """What gres.conf's File=/dev/nvidiaN lines stat: one node per GPU found when the driver loaded."""
    gpus = [f"nvidia{i}" for i in range(len(node.state["gpus"]))]
    assert _dev(node) == sorted([*gpus, "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"])
    node.fault("gpu-missing", gpu=3)
    assert "nvidia3" in _dev(node)  # lost while loaded: its node stays until the driver loads again
    node.reboot()
    assert "nvidia3" not in _dev(node) and "nvidia2" in _dev(node) and "nvidiactl" in _dev(node)
    node.clear("gpu-missing")
    node.reboot()
    node.ok("rmmod", "nvidia_uvm")
    assert _dev(node) == sorted([*gpus, "nvidiactl"])
    node.install("nvidia-driver", None)
    node.reboot()
    assert _dev(node) == []  # no driver, no device nodes


def test_rdma_views(node: SimNode, ibnode: SimNode) -> None:
    ecn = "/sys/class/net/enp24s0np0/ecn"  # a symlink into the /sys/devices/virtual/net overlay on a node
    assert node.read("/sys/devices/virtual/net/enp24s0np0/ecn/roce_np/enable/3").strip() == "0"
    assert (node.root / "sys/devices/virtual/net/enp24s0np0/ecn/roce_rp/enable/7").exists()
    # the CNP DSCP / 802.1p priority at the first of plan/desired.py's candidate paths (firmware defaults)
    np_ = "/sys/devices/virtual/net/enp24s0np0/ecn/roce_np/"
    assert (node.read(np_ + "cnp_dscp").strip(), node.read(np_ + "cnp_802p_prio").strip()) == ("48", "6")
    assert CNP_DSCP_PATHS[0] == "/sys/class/net/{netdev}/ecn/roce_np/cnp_dscp"
    assert CNP_PRIO_PATHS[0] == "/sys/class/net/{netdev}/ecn/roce_np/cnp_802p_prio"
    assert ecn and not (ibnode.root / "sys/devices/virtual/net/ibp24s0/ecn").exists()  # ECN knobs are RoCE's
    cm = node.root / "sys/kernel/config/rdma_cm"
    (cm / "mlx5_0").mkdir()
    node.ok("configfs-sync")  # what the mkdir shim / the sim daemon do right after a mkdir
    assert node.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos").strip() == "0"
    assert node.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode").strip() == "RoCE v2"
    node.write("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "106\n")
    node.reboot()
    assert not (cm / "mlx5_0").exists()  # configfs content is lost at reboot
    counters = node.root / "sys/class/infiniband/mlx5_0/ports/1/counters"
    assert (counters / "symbol_error").read_text().strip() == "0" and (counters / "VL15_dropped").exists()
    assert (node.root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent").exists()


def test_dmesg_formats(node: SimNode) -> None:
    node.fault("xid-79", gpu=2)
    for args, fmt in (((), "monotonic"), (("-T",), "ctime"), (("--time-format=iso",), "iso")):
        events = xid.parse(node.ok("dmesg", *args))
        assert [(e.xid, e.pci_bus_id, e.timestamp_format) for e in events] == [(79, "0000:4c:00", fmt)]
    assert "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.133.20" in node.ok("dmesg")
    assert "err   : " in node.ok("dmesg", "-x", "-l", "err")
