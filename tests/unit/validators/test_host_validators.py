"""OS tuning, software and NCCL validators on outputs in the formats the kernel / tools print."""

from __future__ import annotations

import re

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

os_tuning = validator("os_tuning")
software = validator("software")
nccl = validator("nccl")

CPU = "/sys/devices/system/cpu"
IDLE_CMD = os_tuning.IDLE_LISTING


def idle(disabled: dict[tuple[int, int], str], cpus: int = 4) -> str:
    names = ["POLL", "C1", "C1E", "C6"]
    rows = [
        f"cpu{c}/cpuidle/state{s}/disable:{disabled.get((c, s), '1' if s > 1 else '0')}"
        for c in range(cpus)
        for s in range(4)
    ]
    rows += [f"cpu{c}/cpuidle/state{s}/name:{names[s]}" for c in range(cpus) for s in range(4)]
    return "\n".join(rows) + "\n"


def test_cstates_checked_on_every_cpu(ib_node: NodeExpect) -> None:
    online = {f"cat {CPU}/online": (0, "0-3\n")}
    os_tuning.test_cstates(ib_node, FakeNode({IDLE_CMD: (0, idle({})), **online}))
    with pytest.raises(
        CheckFailed,
        match=r"found cpu3=C6 enabled. Fix: run `clusterforge provision --tags "
        r"cstates --limit ib-01` \(role os_tuning\)",
    ):
        os_tuning.test_cstates(ib_node, FakeNode({IDLE_CMD: (0, idle({(3, 3): "0"})), **online}))
    with pytest.raises(CheckFailed, match="cpu2=no cpuidle states"):
        os_tuning.test_cstates(
            ib_node, FakeNode({IDLE_CMD: (0, idle({}, cpus=2)), f"cat {CPU}/online": (0, "0-2\n")})
        )


def test_cmdline_follows_the_skus_cpu_vendor_not_the_node(ib_node: NodeExpect) -> None:
    """The role takes the SKU's CPU vendor (Intel here), so does the check: /proc/cpuinfo is not read."""
    base = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=16"
    intel = base + " intel_idle.max_cstate=0 processor.max_cstate=1\n"
    node = FakeNode({"cat /proc/cmdline": (0, intel)})
    os_tuning.test_cmdline(ib_node, node)
    assert node.asked == ["cat /proc/cmdline"]
    with pytest.raises(CheckFailed, match=r"intel_idle.max_cstate=<absent>"):
        os_tuning.test_cmdline(
            ib_node, FakeNode({"cat /proc/cmdline": (0, base + " processor.max_cstate=1\n")})
        )


def test_governor_every_cpu(ib_node: NodeExpect) -> None:
    cmd = f"grep -H -m1 '' {CPU}/cpu[0-9]*/cpufreq/scaling_governor"
    out = "".join(
        f"{CPU}/cpu{c}/cpufreq/scaling_governor:{'performance' if c else 'powersave'}\n" for c in range(4)
    )
    with pytest.raises(CheckFailed, match="cpu0=powersave"):
        os_tuning.test_governor(ib_node, FakeNode({cmd: (0, out), f"cat {CPU}/online": (0, "0-3\n")}))


def test_governor_without_cpufreq_is_measured(ib_node: NodeExpect) -> None:
    """No cpufreq driver (seen on a real KVM guest): the glob matches nothing, grep names the pattern
    itself; the node was read, it has no governor - fail, not error."""
    cmd = f"grep -H -m1 '' {CPU}/cpu[0-9]*/cpufreq/scaling_governor"
    err = f"grep: {CPU}/cpu[0-9]*/cpufreq/scaling_governor: No such file or directory\n"
    node = FakeNode({cmd: (2, "", err), f"cat {CPU}/online": (0, "0-1\n")})
    with pytest.raises(CheckFailed, match="cpu0=<no cpufreq>, cpu1=<no cpufreq>"):
        os_tuning.test_governor(ib_node, node)


def test_memlock(ib_node: NodeExpect) -> None:
    cmd = os_tuning.LIMITS
    conf = (
        "==> /etc/security/limits.d/90-clusterforge-memlock.conf <==\n*    soft    memlock    unlimited\n"
        "*    hard    memlock    unlimited\n"
    )
    os_tuning.test_memlock_login(ib_node, FakeNode({cmd: (0, conf)}))
    with pytest.raises(CheckFailed, match="soft=unset hard=unset"):
        os_tuning.test_memlock_login(ib_node, FakeNode({cmd: (0, "")}))
    show = "systemctl show -p DefaultLimitMEMLOCK"
    os_tuning.test_memlock_systemd(ib_node, FakeNode({show: (0, "DefaultLimitMEMLOCK=infinity\n")}))
    with pytest.raises(CheckFailed, match="expected infinity; found 8388608"):
        os_tuning.test_memlock_systemd(ib_node, FakeNode({show: (0, "DefaultLimitMEMLOCK=8388608\n")}))


UBUNTU = 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n'
ROCKY = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n'


def _with(node: NodeExpect, rdma: dict[str, str] | None = None, **pins: object) -> NodeExpect:
    """``node`` with other pins in its desired state (the only place validators read them from)."""
    desired = dict(node.desired_state)
    if rdma is not None:
        desired["rdma"] = {**desired["rdma"], **rdma}
    desired["software"] = {**desired["software"], **pins}
    return node.__class__(**{**node.__dict__, "desired_state": desired})


DCGM_DEB = "datacenter-gpu-manager-4-core\t1:4.2.3-1\tii \ndatacenter-gpu-manager-4-cuda12\t1:4.2.3-1\tii \n"
DRIVER_DEB = (
    "nvidia-driver-570\t570.133.20-0ubuntu1\thi \nnvidia-fabricmanager-570\t570.133.20-1\thi \n"
    "libnvidia-nscq-570\t570.133.20-1\thi \n"
)


def test_packages_against_pins(ib_node: NodeExpect) -> None:
    dpkg = software.DPKG
    listing = (
        "libnccl2\t2.26.2-1+cuda12.8\thi \nrdma-core\t44.0-2\tii \ndoca-ofed\t2.10.0-1\thi \n"
        f"{DCGM_DEB}libnccl-dev\t2.26.2-1+cuda12.8\trc \n{DRIVER_DEB}"
    )
    deb = {software.OS_RELEASE: (0, UBUNTU)}
    # the lab pins DOCA 2.10.0; its ofed_info prints the OFED version of that release (simulated 25.01)
    ofed = {software.OFED_INFO: (0, "OFED-internal-25.01-0.6.0:\n")}
    assert {k: ib_node.desired["rdma"][k] for k in ("stack", "version")} == {
        "stack": "doca-ofed",
        "version": "2.10.0",
    }
    node = FakeNode({dpkg: (0, listing), **deb, **ofed})
    software.test_nccl(ib_node, node)
    software.test_rdma(ib_node, node)
    software.test_dcgm(ib_node, node)
    software.test_driver_packages(ib_node, node)
    # each package of a group at the group's version (DCGM's epoch 1 included); missing ones named
    with pytest.raises(CheckFailed, match=r"datacenter-gpu-manager-4-cuda12=not installed"):
        software.test_dcgm(ib_node, FakeNode({dpkg: (0, listing.replace("-cuda12\t", "-cuda13\t")), **deb}))
    with pytest.raises(CheckFailed, match=r"datacenter-gpu-manager-4-core=4.2.3-1"):
        software.test_dcgm(ib_node, FakeNode({dpkg: (0, listing.replace("1:4.2.3-1", "4.2.3-1", 1)), **deb}))
    with pytest.raises(CheckFailed, match=r"libnvidia-nscq-570=not installed"):
        software.test_driver_packages(
            ib_node, FakeNode({dpkg: (0, listing.replace("libnvidia-nscq-570", "x")), **deb})
        )
    with pytest.raises(CheckFailed, match=r"nvidia-driver-570=570.124.06-1"):
        software.test_driver_packages(
            ib_node, FakeNode({dpkg: (0, listing.replace("570.133.20-0ubuntu1", "570.124.06-1")), **deb})
        )
    want = (
        r"expected 25.01-0.6.0 \(DOCA-OFED of DOCA-Host 2.10.0\); "
        r"found OFED-internal-25.01-0.6.0; package not"
    )
    with pytest.raises(CheckFailed, match=want):
        software.test_rdma(
            ib_node, FakeNode({dpkg: (0, listing.replace("doca-ofed\t2.10.0-1\thi \n", "")), **deb, **ofed})
        )
    software.test_rdma(_with(ib_node, rdma={"stack": "inbox", "version": "44.0"}), node)
    with pytest.raises(
        CheckFailed, match=r"NCCL 2.26.2: expected libnccl2 at 2.26.2-1\+cuda12.8; found libnccl2=2.25.1-1"
    ):
        software.test_nccl(ib_node, FakeNode({dpkg: (0, listing.replace("2.26.2-1", "2.25.1-1", 1)), **deb}))
    with pytest.raises(CheckError, match="dpkg-query` is not installed"):
        software.test_nccl(ib_node, FakeNode(deb))
    with pytest.raises(CheckError, match=r"`cat` .*exited|/etc/os-release"):
        software.test_nccl(ib_node, FakeNode({dpkg: (0, listing), software.OS_RELEASE: (1, "")}))


def test_packages_on_the_rpm_family(ib_node: NodeExpect) -> None:
    """rpm -qa with the validators' query format (input constructed from rpm's documented format)."""
    rpm = software.RPM
    listing = (
        "libnccl (none) 2.26.2 1+cuda12.8 x86_64\nrdma-core (none) 44.0 2.el9 x86_64\n"
        "datacenter-gpu-manager-4-core 1 4.2.3 1 x86_64\ndatacenter-gpu-manager-4-cuda12 1 4.2.3 1 x86_64\n"
        "nvidia-driver 3 570.133.20 1.el9 x86_64\nnvidia-driver-cuda 3 570.133.20 1.el9 x86_64\n"
        "nvidia-driver-libs 3 570.133.20 1.el9 x86_64\nkmod-nvidia-latest-dkms 3 570.133.20 1.el9 x86_64\n"
        "nvidia-fabric-manager (none) 570.133.20 1 x86_64\nlibnvidia-nscq-570 (none) 570.133.20 1 x86_64\n"
    )
    node = FakeNode({rpm: (0, listing), software.OS_RELEASE: (0, ROCKY)})
    inbox = _with(ib_node, rdma={"stack": "inbox", "version": "44.0"})
    software.test_nccl(ib_node, node)
    software.test_rdma(inbox, node)
    software.test_dcgm(ib_node, node)
    software.test_driver_packages(ib_node, node)
    assert software.DPKG not in node.asked
    # the RHEL driver RPMs carry epoch 3: another epoch is another build
    with pytest.raises(CheckFailed, match=r"nvidia-driver-libs=2:570.133.20-1.el9"):
        software.test_driver_packages(
            ib_node,
            FakeNode(
                {
                    rpm: (0, listing.replace("nvidia-driver-libs 3 ", "nvidia-driver-libs 2 ")),
                    software.OS_RELEASE: (0, ROCKY),
                }
            ),
        )
    with pytest.raises(CheckFailed, match=r"libnccl=\(none\):2.26.2-1\+cuda12.9"):
        software.test_nccl(
            ib_node,
            FakeNode({rpm: (0, listing.replace("cuda12.8", "cuda12.9")), software.OS_RELEASE: (0, ROCKY)}),
        )
    with pytest.raises(CheckFailed, match=r"rdma-core: expected 44.0; found rdma-core \(none\):51.0-1.el9"):
        software.test_rdma(
            inbox,
            FakeNode({rpm: (0, "rdma-core (none) 51.0 1.el9 x86_64\n"), software.OS_RELEASE: (0, ROCKY)}),
        )
    with pytest.raises(CheckError, match="`rpm` is not installed"):
        software.test_nccl(ib_node, FakeNode({software.OS_RELEASE: (0, ROCKY)}))


def test_rdma_doca_ofed_stack(ib_node: NodeExpect) -> None:
    node = _with(ib_node, rdma={"stack": "doca-ofed", "version": "25.10"})
    deb = {software.OS_RELEASE: (0, UBUNTU), software.DPKG: (0, "rdma-core\t2510mlnx-1\tii \n")}
    ofed = "OFED-internal-25.10-1.7.1:\n"  # the DOCA capture's line (ofed_info-s__doca-ofed-25.10-...)
    software.test_rdma(node, FakeNode({software.OFED_INFO: (0, ofed), **deb}))
    with pytest.raises(CheckFailed, match=r"expected 25.07; found OFED-internal-25.10-1.7.1; package not"):
        software.test_rdma(
            _with(ib_node, rdma={"stack": "doca-ofed", "version": "25.07"}),
            FakeNode({software.OFED_INFO: (0, ofed), **deb}),
        )
    with pytest.raises(CheckError, match="`ofed_info` is not installed"):
        software.test_rdma(node, FakeNode(deb))
    doca_pkg = {software.DPKG: (0, "doca-ofed\t2.10.0-093000\tii \n"), software.OS_RELEASE: (0, UBUNTU)}
    release = _with(ib_node, rdma={"stack": "doca-ofed", "version": "2.10.0"})
    software.test_rdma(
        release, FakeNode({software.OFED_INFO: (0, "OFED-internal-25.01-0.6.0:\n"), **doca_pkg})
    )
    # a DOCA-Host pin is certified by the OFED version its release installs, not by the package alone
    with pytest.raises(
        CheckFailed,
        match=r"expected 25.01-0.6.0 \(DOCA-OFED of DOCA-Host 2.10.0\); found "
        r"OFED-internal-25.10-1.7.1; package doca-ofed 2.10.0-093000",
    ):
        software.test_rdma(release, FakeNode({software.OFED_INFO: (0, ofed), **doca_pkg}))
    with pytest.raises(CheckError, match=r"DOCA-Host 9\.9\.9 is not in clusterforge's DOCA table"):
        software.test_rdma(
            _with(ib_node, rdma={"stack": "doca-ofed", "version": "9.9.9"}), FakeNode(doca_pkg)
        )


def test_vbios_and_nic_firmware_pins(ib_node: NodeExpect) -> None:
    """Pinned VBIOS / NIC firmware mismatch is a fail naming the part; an absent pin is not checked."""
    q = real("nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt")
    vbios = {g.vbios_version for g in software.parse_q(q).gpus}
    [found] = vbios
    software.test_vbios(_with(ib_node, vbios=found), FakeNode({software.SMI_Q: (0, q)}))
    want = r"GPU VBIOS: expected 96.00.00.00.01 on every GPU; found "
    with pytest.raises(CheckFailed, match=want + f".*{re.escape(found)}"):
        software.test_vbios(_with(ib_node, vbios="96.00.00.00.01"), FakeNode({software.SMI_Q: (0, q)}))
    applies = software.test_vbios.pytestmark[0].args[0]
    assert not applies(_with(ib_node, vbios=None)) and applies(_with(ib_node, vbios="x"))
    with pytest.raises(CheckError, match="`ibstat` is not installed"):
        no_mft = {software.MLXFW_PRESENT: (0, "")}  # a shell builtin: answers on any node
        software.test_nic_firmware(_with(ib_node, nic_firmware="28.43.2026"), FakeNode(no_mft))


def test_nccl_conf(roce_node: NodeExpect) -> None:
    node = roce_node.__class__(
        **{
            **roce_node.__dict__,
            "knobs": {"nccl_net_gdr_level": "PXB", "nccl_ib_gid_index": 3, "nccl_ib_tc": 106},
        }
    )
    cmd = "if [ -f /etc/nccl.conf ]; then cat /etc/nccl.conf; fi"
    hca = ",".join(f"mlx5_{i}:1" for i in range(8))
    conf = (
        f"# managed\nNCCL_IB_HCA=={hca}\nNCCL_SOCKET_IFNAME==mgmt0\nNCCL_NET_GDR_LEVEL=PXB\n"
        "NCCL_IB_GID_INDEX=3\nNCCL_IB_TC=106\n"
    )
    nccl.test_conf(node, FakeNode({cmd: (0, conf)}))
    with pytest.raises(CheckFailed, match="NCCL_IB_TC=<absent>"):
        nccl.test_conf(node, FakeNode({cmd: (0, conf.replace("NCCL_IB_TC=106\n", ""))}))
    with pytest.raises(CheckFailed, match="NCCL_SOCKET_IFNAME=<absent>"):
        nccl.test_conf(node, FakeNode({cmd: (0, "")}))


MLXFW = "mlxfwmanager__cx4-lx-50g-no-matching-image-doca-ofed-rhel10-wporter__1.txt"  # FW 14.20.1010


def test_nic_firmware_read_with_mlxfwmanager_when_mft_is_installed(ib_node: NodeExpect) -> None:
    """With MFT on the node every rail's firmware comes from `mlxfwmanager --query -d <pci>` (a real query
    of one adapter) and the message names the source; without it, ibstat is read and named."""
    cap = real(MLXFW)
    answers = {software.mlxfw_query(r.pci): (0, cap) for r in ib_node.rails}
    mft = FakeNode({software.MLXFW_PRESENT: (0, "/usr/bin/mlxfwmanager\n"), **answers})
    software.test_nic_firmware(_with(ib_node, nic_firmware="14.20.1010"), mft)
    assert "ibstat" not in mft.asked and len([c for c in mft.asked if c.startswith("mlxfwmanager")]) == 8
    with pytest.raises(
        CheckFailed, match=r"compute NIC firmware \(mlxfwmanager --query\): expected 28.43.2026"
    ):
        software.test_nic_firmware(_with(ib_node, nic_firmware="28.43.2026"), mft)
    broken = FakeNode(
        {software.MLXFW_PRESENT: (0, "/usr/bin/mlxfwmanager\n")}
    )  # present, but the query fails
    with pytest.raises(CheckError):
        software.test_nic_firmware(_with(ib_node, nic_firmware="14.20.1010"), broken)
    no_mft = FakeNode(
        {software.MLXFW_PRESENT: (0, ""), "ibstat": (0, real("ibstat__h100-cx7-ib400x8-eth200-gpud__4.txt"))}
    )
    with pytest.raises(CheckFailed, match=r"\(ibstat \(mlxfwmanager not installed\)\)"):
        software.test_nic_firmware(_with(ib_node, nic_firmware="14.20.1010"), no_mft)
