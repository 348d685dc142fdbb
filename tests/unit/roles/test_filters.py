"""Pure-Python tests of the clusterforge.node filters and of the mlxconfig output parser."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from tests.conftest import REPO

from ._support import PLAYBOOKS

COLL = PLAYBOOKS / "collections"


@pytest.fixture(scope="module")
def filters(collections_installed) -> ModuleType:
    import sys

    sys.path[:0] = [str(COLL), str(REPO / "collections")]
    try:
        return importlib.import_module("ansible_collections.clusterforge.node.plugins.filter.clusterforge")
    finally:
        del sys.path[:2]


@pytest.fixture(scope="module")
def mlxconfig() -> ModuleType:
    import sys

    sys.path[:0] = [str(COLL)]
    try:
        return importlib.import_module("ansible_collections.clusterforge.node.plugins.modules.mlxconfig")
    finally:
        del sys.path[:1]


DESIRED = [
    "intel_idle.max_cstate=0",
    "processor.max_cstate=1",
    "iommu=pt",
    "default_hugepagesz=1G",
    "hugepagesz=1G",
    "hugepages=0:8,1:8",
]
MANAGED = [
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "iommu",
    "intel_iommu",
    "default_hugepagesz",
    "hugepagesz",
    "hugepages",
]


def test_cmdline_all_in_effect(filters) -> None:
    running = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet " + " ".join(DESIRED)
    assert filters.cmdline_missing(running, DESIRED) == []
    assert filters.cmdline_stale(running, DESIRED, MANAGED) == []


def test_cmdline_last_occurrence_wins(filters) -> None:
    assert filters.cmdline_missing(
        "processor.max_cstate=1 processor.max_cstate=5", ["processor.max_cstate=1"]
    ) == ["processor.max_cstate=1"]
    assert (
        filters.cmdline_missing("processor.max_cstate=5 processor.max_cstate=1", ["processor.max_cstate=1"])
        == []
    )


def test_cmdline_hugepage_pairs(filters) -> None:
    want = ["hugepagesz=1G", "hugepages=16"]
    assert filters.cmdline_missing("hugepagesz=1G hugepages=16", want) == []
    assert filters.cmdline_missing("hugepagesz=2M hugepages=16 hugepagesz=1G hugepages=8", want) == want
    assert filters.cmdline_missing("hugepagesz=2M hugepages=512 hugepagesz=1G hugepages=16", want) == []


def test_cmdline_fresh_node(filters) -> None:
    assert filters.cmdline_missing("BOOT_IMAGE=/vmlinuz ro quiet", DESIRED) == DESIRED


def test_cmdline_stale_parameters(filters) -> None:
    running = "ro iommu=pt processor.max_cstate=1 hugepagesz=1G hugepages=16 intel_idle.max_cstate=0 quiet"
    assert filters.cmdline_stale(running, ["processor.max_cstate=1", "iommu=pt"], MANAGED) == [
        "hugepagesz=1G",
        "hugepages=16",
        "intel_idle.max_cstate=0",
    ]
    # a different value of a wanted single-valued key is "missing", not "stale"
    assert filters.cmdline_stale("iommu=off", ["iommu=pt"], MANAGED) == []
    assert filters.cmdline_missing("iommu=off", ["iommu=pt"]) == ["iommu=pt"]


def test_package_specs(filters) -> None:
    ps = filters.package_specs
    assert ps(["nvidia-driver-570"], "570.133.20", "Debian") == ["nvidia-driver-570=570.133.20*"]
    assert ps(["datacenter-gpu-manager-4-cuda12"], "4.2.3", "Debian", "1") == [
        "datacenter-gpu-manager-4-cuda12=1:4.2.3*"
    ]
    assert ps(["nvidia-driver", "kmod-nvidia-latest-dkms"], "570.133.20", "RedHat", "3") == [
        "nvidia-driver-3:570.133.20",
        "kmod-nvidia-latest-dkms-3:570.133.20",
    ]
    assert ps(["nvidia-fabric-manager"], "570.133.20", "RedHat", "") == ["nvidia-fabric-manager-570.133.20"]
    assert ps(["datacenter-gpu-manager-4-cuda12"], "", "RedHat", "1") == ["datacenter-gpu-manager-4-cuda12"]
    assert ps("nvidia-driver-570", "570.133.20", "Debian") == ["nvidia-driver-570=570.133.20*"]
    with pytest.raises(Exception, match="unsupported OS family"):
        ps(["x"], "1.0", "Suse")


def test_packages_missing(filters) -> None:
    """The gate in front of every package task: a name counts as present only at the pinned version."""
    pm = filters.packages_missing
    # ansible_facts.packages shapes: apt (version with epoch) and rpm (version/release/epoch apart)
    apt = {
        "chrony": [{"name": "chrony", "version": "4.3-2+deb12u1", "arch": "amd64"}],
        "datacenter-gpu-manager-4-cuda12": [{"name": "x", "version": "1:4.2.3-1", "arch": "amd64"}],
        "libnccl2": [{"name": "libnccl2", "version": "2.26.2-1+cuda12.8", "arch": "amd64"}],
    }
    assert pm(["chrony", "tuned"], apt) == ["tuned"]
    assert pm(["chrony"], apt, "", "Debian") == []
    assert pm(["datacenter-gpu-manager-4-cuda12"], apt, "4.2.3", "Debian", "1") == []
    assert pm(["datacenter-gpu-manager-4-cuda12"], apt, "4.2.4", "Debian", "1") == [
        "datacenter-gpu-manager-4-cuda12"
    ]
    # no epoch asked, installed has one: the pattern does not match -> "missing", apt decides
    dcgm = "datacenter-gpu-manager-4-cuda12"
    assert pm([dcgm], apt, "4.2.3", "Debian") == [dcgm]
    assert pm("libnccl2", apt, "2.26.2-1+cuda12.8", "Debian") == []
    assert pm("libnccl2", apt, "2.26.2-1+cuda12.9", "Debian") == ["libnccl2"]
    rpm = {"nvidia-driver": [{"version": "570.133.20", "release": "1.el9", "epoch": "3"}]}
    assert pm(["nvidia-driver"], rpm, "570.133.20", "RedHat", "3") == []
    assert pm(["nvidia-driver"], rpm, "3:570.133.20", "RedHat") == []
    assert pm(["nvidia-driver"], rpm, "570.133.20", "RedHat", "2") == ["nvidia-driver"]
    assert pm(["nvidia-driver"], rpm, "570.124.06", "RedHat", "3") == ["nvidia-driver"]
    # a pin with a release (the plan's NCCL pin) is compared with version-release
    nccl = {"libnccl": [{"version": "2.26.2", "release": "1+cuda12.8", "epoch": None}]}
    assert pm(["libnccl"], nccl, "2.26.2-1+cuda12.8", "RedHat") == []
    assert pm(["libnccl"], nccl, "2.26.2-1+cuda12.9", "RedHat") == ["libnccl"]
    assert pm(["libnccl"], nccl, "2.26.2", "RedHat") == []
    # no facts (package_facts did not run), an unknown family: everything is "missing"
    assert pm(["chrony", ""], None) == ["chrony"]
    assert pm(["chrony"], apt, "4.3", "Suse") == ["chrony"]
    # per-package pins (the benchmarks role's tools each have their own version)
    pins = [{"package": "libnccl2", "version": "2.26.2"}, {"package": "chrony", "version": "4.4"}]
    assert pm(pins, apt, "", "Debian") == ["chrony"]


def test_apt_version_pattern(filters) -> None:
    assert filters.apt_version_pattern("570.133.20") == "570.133.20*"
    assert filters.apt_version_pattern("4.2.3", "1") == "1:4.2.3*"
    assert filters.apt_version_pattern("1:4.2.3", "1") == "1:4.2.3*"
    with pytest.raises(Exception, match="empty version"):
        filters.apt_version_pattern("")


MLXCONFIG_Q = """
Device #1:
----------

Device type:    ConnectX7
Name:           MCX75310AAS-NEA_Ax
Description:    NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE / NDR IB (default mode); Single-port OSFP
Device:         0000:18:00.0

Configurations:                                      Default             Current             Next Boot
*       PCI_WR_ORDERING                             per_mkey(0)         force_relax(1)      force_relax(1)
        ATS_ENABLED                                 False(0)            False(0)            False(0)
"""


def test_mlxconfig_parse_and_match(mlxconfig) -> None:
    vals = mlxconfig.parse_query(MLXCONFIG_Q, ["PCI_WR_ORDERING", "ATS_ENABLED"])
    assert vals["PCI_WR_ORDERING"] == {
        "default": "per_mkey(0)",
        "current": "force_relax(1)",
        "next_boot": "force_relax(1)",
    }
    assert mlxconfig.matches(vals["ATS_ENABLED"]["next_boot"], False)
    assert mlxconfig.matches(vals["ATS_ENABLED"]["next_boot"], "0")
    assert mlxconfig.matches(vals["PCI_WR_ORDERING"]["next_boot"], "force_relax")
    assert mlxconfig.matches(vals["PCI_WR_ORDERING"]["next_boot"], 1)
    assert not mlxconfig.matches(vals["PCI_WR_ORDERING"]["next_boot"], "per_mkey")
    assert mlxconfig.setting_text(True) == "1"


def test_nvidia_desired_problems(filters: ModuleType) -> None:
    """The one statement of the NVIDIA pin rule (preflight and the nvidia_gpu role both ask it)."""
    f = filters.nvidia_desired_problems
    groups = [
        {"label": "driver", "version": "570.133.20"},
        {"label": "fabricmanager", "version": "570.133.20"},
        {"label": "dcgm", "version": "1:4.2.3"},
    ]
    good = {"nvidia_driver": {"branch": "570", "version": "570.133.20"}, "packages": {"Debian": groups}}
    labels = ["driver", "fabricmanager", "dcgm"]
    assert f(good, "Debian", labels) == []
    no_family = "the plan pins no NVIDIA packages for OS family RedHat (it has: Debian)"
    assert f(good, "RedHat", labels) == [no_family]
    assert f(good, "RedHat", []) == []  # nothing installed from packages: no group needed
    off = {**good, "nvidia_driver": {"branch": "570", "version": "5700.1"}}  # a prefix is not the branch
    assert f(off, "Debian", ["dcgm"]) == ["driver 5700.1 is not on branch 570"]
    moved = {**good, "packages": {"Debian": [dict(groups[0], version="570.124.06"), groups[2]]}}
    assert f(moved, "Debian", labels) == [
        "driver packages pinned at 570.124.06, not the driver 570.133.20",
        "no pinned fabricmanager packages for Debian",
    ]
    assert f({}, "Debian", ["driver"]) == [
        "no pinned driver (software.nvidia_driver)",
        "the plan pins no NVIDIA packages for OS family Debian (it has: )",
    ]
    assert f(None, "Debian", []) == ["no pinned driver (software.nvidia_driver)"]
