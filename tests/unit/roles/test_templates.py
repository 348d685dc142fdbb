"""Role templates and derived variables rendered from the sample plan inventory (fixtures/inventory).

Rendering goes through Ansible's templar with the real variable precedence (role defaults < inventory <
role vars < the OS family's vars file), see helpers/render.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import PLAYBOOKS

from ._support import HERE, INVENTORY

DEBIAN = {
    "distribution": "Debian",
    "distribution_major_version": "12",
    "distribution_version": "12.5",
    "architecture": "x86_64",
    "processor": ["0", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8480C"],
}
UBUNTU = {
    "distribution": "Ubuntu",
    "distribution_major_version": "24",
    "distribution_version": "24.04",
    "architecture": "x86_64",
    "processor": ["0", "AuthenticAMD", "AMD EPYC 7742 64-Core Processor"],
}
ROCKY = {
    "distribution": "Rocky",
    "distribution_major_version": "9",
    "distribution_version": "9.4",
    "architecture": "x86_64",
    "processor": ["0", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8480C"],
}


def render(
    role: str,
    host: str = "roce-01",
    family: str = "Debian",
    facts: dict | None = None,
    templates: dict[str, str] | None = None,
    expressions: dict[str, str] | None = None,
    variables: dict[str, Any] | None = None,
) -> dict[str, Any]:
    requests = {"templates": templates or {}, "expressions": expressions or {}, "vars": variables or {}}
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "helpers" / "render.py"),
            str(INVENTORY),
            host,
            role,
            family,
            json.dumps(facts or DEBIAN),
            json.dumps(requests),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


# ---- nccl ------------------------------------------------------------------------------------------


def test_nccl_conf_roce_node() -> None:
    out = render("nccl", templates={"conf": "templates/nccl.conf.j2"})["conf"]
    assert out == (
        "# Ansible managed\n"
        "# clusterforge nccl: system-wide NCCL settings (NAME=value; the environment overrides them).\n"
        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n"
        "NCCL_SOCKET_IFNAME==mgmt0\n"
        "NCCL_NET_GDR_LEVEL=PXB\n"
        "NCCL_IB_GID_INDEX=3\n"
        "NCCL_IB_TC=106\n"
    )


def test_nccl_conf_infiniband_node_has_no_roce_settings() -> None:
    out = render("nccl", host="ib-01", templates={"conf": "templates/nccl.conf.j2"})["conf"]
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in out
    assert "NCCL_IB_GID_INDEX" not in out and "NCCL_IB_TC" not in out


def test_nccl_conf_extra_env() -> None:
    out = render(
        "nccl",
        templates={"conf": "templates/nccl.conf.j2"},
        variables={"nccl_extra_env": {"NCCL_IB_QPS_PER_CONNECTION": 4}},
    )["conf"]
    assert out.endswith("NCCL_IB_TC=106\nNCCL_IB_QPS_PER_CONNECTION=4\n")


# ---- os_tuning -------------------------------------------------------------------------------------


def test_grub_dropin_intel() -> None:
    out = render("os_tuning", templates={"grub": "templates/grub-clusterforge.cfg.j2"})["grub"]
    assert out.splitlines()[-1] == (
        'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }'
        "intel_idle.max_cstate=0 processor.max_cstate=1 iommu=pt "
        'default_hugepagesz=1G hugepagesz=1G hugepages=0:8,1:8"'
    )


@pytest.mark.parametrize(("family", "facts"), [("Debian", DEBIAN), ("Debian", UBUNTU), ("RedHat", ROCKY)])
def test_node_tools_per_family_include_ethtool(family: str, facts: dict) -> None:
    """Every node gets ethtool (same package name on Debian/Ubuntu and the RHEL family) from os_tuning: the
    link-counters check reads `ethtool -S` of the RoCE rails and names this role and tag when it is
    missing."""
    from clusterforge.remote.tools import TOOLS

    out = render("os_tuning", family=family, facts=facts, expressions={"p": "{{ os_tuning_packages }}"})
    assert "ethtool" in out["p"]
    tool = TOOLS["ethtool"]
    assert (tool.package, tool.role, tool.tag) == ("ethtool", "os_tuning", "os_tuning_packages")
    tasks = (PLAYBOOKS / "roles/os_tuning/tasks/main.yml").read_text()
    assert 'name: "{{ os_tuning_packages }}"' in tasks and "os_tuning_packages]" in tasks


@pytest.mark.parametrize("facts", [DEBIAN, UBUNTU, ROCKY])
def test_kernel_parameters_are_the_compiled_ones_whatever_the_node(facts: dict) -> None:
    """The role derives nothing: the SKU's (Intel) compiled parameters, also on an AMD node's facts; site
    extras come after them. The derivation itself is tested in tests/unit/plan/test_desired.py."""
    compiled = [
        "intel_idle.max_cstate=0",
        "processor.max_cstate=1",
        "iommu=pt",
        "default_hugepagesz=1G",
        "hugepagesz=1G",
        "hugepages=0:8,1:8",
    ]
    out = render("os_tuning", facts=facts, expressions={"p": "{{ os_tuning_cmdline_params }}"})
    assert out["p"] == compiled
    out = render(
        "os_tuning",
        facts=facts,
        variables={"os_tuning_cmdline_extra": ["nosmt"]},
        expressions={"p": "{{ os_tuning_cmdline_params }}"},
    )
    assert out["p"] == [*compiled, "nosmt"]


def test_cpuidle_attributes_cover_states_deeper_than_the_limit() -> None:
    out = render(
        "os_tuning",
        expressions={"a": "{{ _os_tuning_cpuidle_attrs }}"},
        variables={"_os_tuning_cstate_max": "{{ 2 if clusterforge_desired.cpu.cstate_max else 0 }}"},
    )["a"]
    assert [a["path"] for a in out][:2] == [
        "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state3/disable",
        "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state4/disable",
    ]
    assert all(a["value"] == "1" and a["missing"] == "ignore" for a in out)


def test_sysctl_dropin_and_runtime_paths() -> None:
    out = render(
        "os_tuning",
        templates={"conf": "templates/sysctl.conf.j2"},
        expressions={"attrs": "{{ _os_tuning_sysctl_attrs }}"},
        variables={
            "_os_tuning_sysctl_all": "{{ clusterforge_desired.sysctls"
            " | combine({'net/ipv4/conf/eth0.100/rp_filter': 2}) }}"
        },
    )
    lines = out["conf"].splitlines()
    assert "kernel.numa_balancing = 0" in lines
    assert "net.ipv4.tcp_rmem = 4096 87380 268435456" in lines
    assert "vm.zone_reclaim_mode = 0" in lines
    assert "net/ipv4/conf/eth0.100/rp_filter = 2" in lines
    paths = {a["name"]: a["path"] for a in out["attrs"]}
    assert paths["kernel.numa_balancing"] == "/proc/sys/kernel/numa_balancing"
    assert paths["net/ipv4/conf/eth0.100/rp_filter"] == "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"
    # the default set stays within what the lab can write (kernel.numa_balancing, vm.*, net.*)
    assert all(k.startswith(("net.", "vm.")) or k == "kernel.numa_balancing" for k in paths if "/" not in k)


def test_boot_time_tuning_conf_and_chrony() -> None:
    out = render(
        "os_tuning", templates={"conf": "templates/os-tuning.conf.j2", "chrony": "templates/chrony.conf.j2"}
    )
    assert "GOVERNOR=performance\nCSTATE_MAX=1\nTHP=madvise\n" in out["conf"]
    assert "server 10.244.0.1 iburst\n" in out["chrony"] and "pool" not in out["chrony"]


def test_chrony_paths_per_family() -> None:
    out = render(
        "os_tuning",
        family="RedHat",
        facts=ROCKY,
        templates={"chrony": "templates/chrony.conf.j2"},
        expressions={"conf": "{{ _os_tuning_chrony_conf }}", "svc": "{{ _os_tuning_chrony_service }}"},
    )
    assert out["conf"] == "/etc/chrony.conf" and out["svc"] == "chronyd"
    assert "driftfile /var/lib/chrony/drift\n" in out["chrony"]


# ---- rdma ------------------------------------------------------------------------------------------


def test_roce_qos_conf() -> None:
    out = render("rdma", templates={"conf": "templates/roce-qos.conf.j2"})["conf"]
    body = [line for line in out.splitlines() if not line.startswith("#")]
    assert body == [
        "QOS_TOOL=mlnx_qos",
        "TRUST=dscp",
        "PFC=0,0,0,1,0,0,0,0",
        "PRIORITY=3",
        "DSCP_PRIO=26:3",
        "DSCP_PRIO=48:6",
        "ECN=1",
        "ECN_MISSING=fail",
        "CNP_DSCP=48",
        "CNP_PRIO=6",
        "CNP_DSCP_PATH=/sys/class/net/{netdev}/ecn/roce_np/cnp_dscp",
        "CNP_DSCP_PATH=/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_dscp",
        "CNP_PRIO_PATH=/sys/class/net/{netdev}/ecn/roce_np/cnp_802p_prio",
        "CNP_PRIO_PATH=/sys/kernel/debug/mlx5/{pci}/cc_params/np_cnp_prio",
        "ROCE_TOS=106",
        "ROCE_MODE=RoCE v2",
        "WAIT_S=60",
        "RAIL=enp24s0np0,mlx5_0,1,0000:18:00.0,9000",
        "RAIL=enp64s0np0,mlx5_1,1,0000:40:00.0,9000",
    ]


def test_qos_comes_from_the_compiled_desired_state() -> None:
    """The role takes the PFC vector, the QoS tool and each rail's MTU from clusterforge_desired as is."""
    d = "clusterforge_desired"
    rail0 = f"{d}.rails[0] | combine({{'netdev_mtu': 4200, 'qos': {d}.rails[0].qos"
    rail0 += " | combine({'pfc_vector': [0, 0, 0, 0, 0, 1, 0, 0]})})"
    rdma = f"{d}.rdma | combine({{'qos_tool': 'dcb'}})"
    out = render(
        "rdma",
        variables={d: f"{{{{ {d} | combine({{'rdma': {rdma}, 'rails': [{rail0}] + {d}.rails[1:]}}) }}}}"},
        expressions={"pfc": "{{ _rdma_pfc }}", "tool": "{{ _rdma_qos_tool }}", "mtu": "{{ _rdma_want }}"},
        templates={"conf": "templates/roce-qos.conf.j2"},
    )
    assert (out["pfc"], out["tool"]) == ("0,0,0,0,0,1,0,0", "dcb")
    assert "QOS_TOOL=dcb\n" in out["conf"] and "RAIL=enp24s0np0,mlx5_0,1,0000:18:00.0,4200\n" in out["conf"]


def test_rail_selection_by_link_layer() -> None:
    expr = {
        "roce": "{{ _rdma_roce_rails | map(attribute='netdev') | list }}",
        "ib": "{{ _rdma_ib_rails | map(attribute='netdev') | list }}",
        "net": "{{ _rdma_net_rails | map(attribute='netdev') | list }}",
    }
    assert render("rdma", expressions=expr) == {
        "roce": ["enp24s0np0", "enp64s0np0"],
        "ib": [],
        "net": ["enp24s0np0", "enp64s0np0"],
    }
    assert render("rdma", host="ib-01", expressions=expr) == {
        "roce": [],
        "ib": ["ibp24s0", "ibp64s0"],
        "net": [],
    }


def test_rail_network_files_per_backend() -> None:
    out = render(
        "rdma",
        variables={"item": "{{ clusterforge_rails[0] }}"},
        templates={
            "networkd": "templates/rail.network.j2",
            "nm": "templates/rail.nmconnection.j2",
            "netplan": "templates/rails.netplan.yaml.j2",
            "udev": "templates/90-clusterforge-roce-qos.rules.j2",
        },
        expressions={"backend": "{{ _rdma_backend }}"},
    )
    assert out["backend"] == "networkd"
    assert "[Match]\nName=enp24s0np0\n" in out["networkd"]
    assert "MTUBytes=9000\n" in out["networkd"] and "Address=10.245.0.11/24\n" in out["networkd"]
    assert "RequiredForOnline=no\n" in out["networkd"]
    assert (
        "type=ethernet\n" in out["nm"]
        and "mtu=9000\n" in out["nm"]
        and "address1=10.245.0.11/24\n" in out["nm"]
    )
    assert "    enp64s0np0:\n" in out["netplan"] and "        - 10.245.1.11/24\n" in out["netplan"]
    assert 'KERNEL=="enp24s0np0|enp64s0np0"' in out["udev"]
    assert 'ENV{SYSTEMD_WANTS}+="clusterforge-roce-qos@%k.service"' in out["udev"]


def test_network_backend_per_distribution() -> None:
    expr = {"b": "{{ _rdma_backend }}"}
    assert render("rdma", facts=UBUNTU, expressions=expr)["b"] == "netplan"
    assert render("rdma", family="RedHat", facts=ROCKY, expressions=expr)["b"] == "networkmanager"


# ---- nvidia_gpu ------------------------------------------------------------------------------------


def test_apt_source_and_pins_debian() -> None:
    out = render(
        "nvidia_gpu",
        templates={"list": "templates/nvidia.list.j2", "pref": "templates/nvidia.pref.j2"},
        expressions={
            "specs": "{% for g in _nvidia_gpu_pinned_groups %}"
            "{{ g.packages | clusterforge.node.package_specs(g.version, 'Debian', g.epoch)"
            " | join(' ') }};{% endfor %}"
        },
    )
    assert out["list"].splitlines()[-1] == "deb [trusted=yes] http://10.244.0.1:8780/nvidia stable main"
    pref = out["pref"]
    # one stanza per (globs, version): every *nvidia* package of the release, and both DCGM packages
    assert (
        "# driver, fabricmanager\nPackage: *nvidia*\nPin: version 570.133.20*\nPin-Priority: 1001\n" in pref
    )
    assert "# dcgm\nPackage: datacenter-gpu-manager-4-*\nPin: version 1:4.2.3*\nPin-Priority: 1001\n" in pref
    assert pref.count("Package:") == 2
    assert out["specs"] == (
        "nvidia-driver-570=570.133.20*;"
        "nvidia-fabricmanager-570=570.133.20* libnvidia-nscq-570=570.133.20*;"
        "datacenter-gpu-manager-4-core=1:4.2.3* datacenter-gpu-manager-4-cuda12=1:4.2.3*;"
    )


def test_apt_source_signed_cuda_repo_ubuntu() -> None:
    out = render(
        "nvidia_gpu",
        facts=UBUNTU,
        templates={"list": "templates/nvidia.list.j2"},
        variables={
            "nvidia_gpu_apt_repo_trusted": False,
            "nvidia_gpu_apt_repo": "https://developer.download.nvidia.com/compute/cuda/repos/"
            "{{ _nvidia_gpu_cuda_distro }}/x86_64/",
            "nvidia_gpu_apt_suite": "/",
            "nvidia_gpu_apt_components": [],
        },
        expressions={"key": "{{ nvidia_gpu_apt_key_url }}"},
    )
    assert out["list"].splitlines()[-1] == (
        "deb [signed-by=/etc/apt/keyrings/clusterforge-nvidia.asc] "
        "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/ /"
    )
    assert out["key"].endswith("/ubuntu2404/x86_64/3bf863cc.pub")


def test_dnf_package_specs_and_versionlock_rhel() -> None:
    out = render(
        "nvidia_gpu",
        family="RedHat",
        facts=ROCKY,
        expressions={
            "specs": "{{ _nvidia_gpu_pinned_groups | map(attribute='label') | list }}",
            "driver": "{{ (_nvidia_gpu_pinned_groups | first).packages | clusterforge.node."
            "package_specs((_nvidia_gpu_pinned_groups | first).version, 'RedHat', "
            "(_nvidia_gpu_pinned_groups | first).epoch) }}",
            "fm": "{{ (_nvidia_gpu_pinned_groups[1]).packages | clusterforge.node.package_specs("
            "_nvidia_gpu_pinned_groups[1].version, 'RedHat', _nvidia_gpu_pinned_groups[1].epoch) }}",
            "dcgm": "{{ (_nvidia_gpu_pinned_groups[2]).packages | clusterforge.node.package_specs("
            "_nvidia_gpu_pinned_groups[2].version, 'RedHat', _nvidia_gpu_pinned_groups[2].epoch) }}",
            "repo": "{{ nvidia_gpu_dnf_repo }}",
            "stream": "{{ _nvidia_gpu_dnf_stream }}",
        },
    )
    assert out["specs"] == ["driver", "fabricmanager", "dcgm"]
    assert out["driver"] == [
        "nvidia-driver-3:570.133.20",
        "nvidia-driver-cuda-3:570.133.20",
        "nvidia-driver-libs-3:570.133.20",
        "kmod-nvidia-latest-dkms-3:570.133.20",
    ]
    assert out["fm"] == ["nvidia-fabric-manager-570.133.20", "libnvidia-nscq-570-570.133.20"]
    assert out["dcgm"] == ["datacenter-gpu-manager-4-core-1:4.2.3", "datacenter-gpu-manager-4-cuda12-1:4.2.3"]
    assert out["repo"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"
    assert out["stream"] == "570-dkms"
    knob = {"nvidia_gpu_dnf_module_stream": "570-open"}  # the site's flavour wins over the branch's DKMS one
    stream = {"stream": "{{ _nvidia_gpu_dnf_stream }}"}
    assert render("nvidia_gpu", family="RedHat", facts=ROCKY, variables=knob, expressions=stream) == {
        "stream": "570-open"
    }


def test_image_driver_pins_only_what_the_role_installs() -> None:
    out = render(
        "nvidia_gpu",
        variables={"nvidia_gpu_driver_source": "image"},
        templates={"pref": "templates/nvidia.pref.j2"},
        expressions={"labels": "{{ _nvidia_gpu_pinned_groups | map(attribute='label') | list }}"},
    )
    assert out["labels"] == ["fabricmanager", "dcgm"]
    assert "# fabricmanager\nPackage: *nvidia*\nPin: version 570.133.20*\n" in out["pref"]
    assert "# dcgm\nPackage: datacenter-gpu-manager-4-*\nPin: version 1:4.2.3*\n" in out["pref"]
    assert "nvidia-driver" not in out["pref"]


def _desired_with(**software: Any) -> dict[str, Any]:
    """The fixture SKU's clusterforge_desired with `software` keys replaced."""
    import yaml

    text = (INVENTORY.parent / "group_vars" / "sku_h100_sxm_8x400g_roce.yml").read_text()
    desired = yaml.safe_load(text)["clusterforge_desired"]
    desired["software"] = {**desired["software"], **software}
    return desired


def test_desired_state_problems_name_what_the_plan_lacks() -> None:
    """validate.yml fails the role when the plan's desired state cannot drive it: no pinned groups for the
    node's OS family, a driver group at another version than the pinned driver, a driver off its branch."""
    expr = {"problems": "{{ _nvidia_gpu_desired_problems }}"}
    assert render("nvidia_gpu", expressions=expr)["problems"] == []
    assert render("nvidia_gpu", family="RedHat", facts=ROCKY, expressions=expr)["problems"] == []
    base = _desired_with()
    debian = base["software"]["packages"]["Debian"]
    only_rhel = _desired_with(packages={"RedHat": base["software"]["packages"]["RedHat"]})
    out = render("nvidia_gpu", variables={"clusterforge_desired": only_rhel}, expressions=expr)
    missing = ["the plan pins no NVIDIA packages for OS family Debian (it has: RedHat)"]
    assert out["problems"] == missing
    moved = [dict(g, version="570.124.06") if g["label"] == "driver" else g for g in debian]
    off = _desired_with(packages={"Debian": moved}, nvidia_driver={"branch": "550", "version": "570.133.20"})
    out = render("nvidia_gpu", variables={"clusterforge_desired": off}, expressions=expr)
    assert out["problems"] == [
        "driver 570.133.20 is not on branch 550",
        "driver packages pinned at 570.124.06, not the driver 570.133.20",
    ]
    fm = [dict(g, version="570.124.06") if g["label"] == "fabricmanager" else g for g in debian]
    fm_off = _desired_with(packages={"Debian": fm})
    out = render("nvidia_gpu", variables={"clusterforge_desired": fm_off}, expressions=expr)
    assert out["problems"] == ["fabricmanager packages pinned at 570.124.06, not the driver 570.133.20"]
    image = render(
        "nvidia_gpu",
        variables={"clusterforge_desired": only_rhel, "nvidia_gpu_driver_source": "image"},
        expressions=expr,
    )
    # an image driver needs no driver group; fabric manager and DCGM still come from packages
    assert image["problems"] == missing
    no_dcgm = [g for g in debian if g["label"] != "dcgm"]
    out = render(
        "nvidia_gpu",
        variables={"clusterforge_desired": _desired_with(packages={"Debian": no_dcgm})},
        expressions=expr,
    )
    assert out["problems"] == ["no pinned dcgm packages for Debian"]
    unpinned = dict(base["software"])
    del unpinned["nvidia_driver"]
    out = render(
        "nvidia_gpu", variables={"clusterforge_desired": {**base, "software": unpinned}}, expressions=expr
    )
    assert out["problems"] == ["no pinned driver (software.nvidia_driver)"]


def test_acs_conf_lists_the_rail_nics() -> None:
    out = render("nvidia_gpu", templates={"acs": "templates/acs.conf.j2"})["acs"]
    assert "SCOPE=gpu_nic_paths\nNIC_PCI=0000:18:00.0\nNIC_PCI=0000:40:00.0\n" in out


# clusterforge_desired with a lossless storage network: storage.nics carries the rails' QoS (plan/desired.py)
_LOSSLESS = (
    "{{ clusterforge_desired | combine({'storage': {'nics': {'netdevs': ['stor0', 'stor1'], 'mtu': 9000,"
    " 'speed_gbps': 200, 'cidr': '10.246.0.0/24', 'qos': clusterforge_desired.rails[0].qos}}}) }}"
)


def test_lossless_storage_nics_get_the_rails_qos_script_lines() -> None:
    out = render(
        "rdma",
        variables={"clusterforge_desired": _LOSSLESS},
        templates={
            "conf": "templates/roce-qos.conf.j2",
            "udev": "templates/90-clusterforge-roce-qos.rules.j2",
        },
        expressions={
            "nics": "{{ _rdma_storage_qos_nics | map(attribute='netdev') | list }}",
            "pfc": "{{ _rdma_pfc }}",
        },
    )
    assert out["nics"] == ["stor0", "stor1"] and out["pfc"] == "0,0,0,1,0,0,0,0"
    rails = [line for line in out["conf"].splitlines() if line.startswith("RAIL=")]
    assert rails[-2:] == ["RAIL=stor0,-,1,-,9000", "RAIL=stor1,-,1,-,9000"]
    assert 'KERNEL=="enp24s0np0|enp64s0np0|stor0|stor1"' in out["udev"]


def test_storage_nics_get_no_qos_unless_lossless() -> None:
    plain = _LOSSLESS.replace(", 'qos': clusterforge_desired.rails[0].qos", "")
    out = render(
        "rdma",
        variables={"clusterforge_desired": plain},
        templates={"conf": "templates/roce-qos.conf.j2"},
        expressions={"nics": "{{ _rdma_storage_qos_nics }}"},
    )
    assert out["nics"] == [] and "stor0" not in out["conf"]
    assert render("rdma", expressions={"nics": "{{ _rdma_storage_qos_nics }}"})["nics"] == []


# ---- rdma: every rail's link settings in one module call ----------------------------------------------


def test_rail_link_settings_one_call_in_order_per_rail() -> None:
    """tasks/network.yml's one command_setting call (was four loops): per RoCE rail admin state, MTU (the
    two read from one `ip -o link show`) and IPv4 address; the patterns read `ip`'s real line forms."""
    import re

    out = render("rdma", expressions={"s": "{{ _rdma_link_settings }}", "rails": "{{ rdma_rails }}"})
    rails, settings = out["rails"], out["s"]
    names = [s["name"] for s in settings]
    want = []
    for r in rails:
        want += [f"{r['netdev']} link admin state", f"{r['netdev']} MTU", f"{r['netdev']} IPv4 address"]
    assert names == want
    admin, mtu, addr = settings[:3]
    assert admin["probe"] == mtu["probe"] == ["ip", "-o", "link", "show", "dev", rails[0]["netdev"]]
    line = (
        f"5: {rails[0]['netdev']}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode "
        "DEFAULT group default qlen 1000\\    link/ether 02:00:00:00:01:01 brd ff:ff:ff:ff:ff:ff"
    )
    assert re.search(admin["extract"], line).group(1) == "UP"
    assert re.search(mtu["extract"], line).group(1) == "9000" and mtu["desired"] == "9000"
    assert mtu["apply"] == [["ip", "link", "set", "dev", rails[0]["netdev"], "mtu", "9000"]]
    assert addr["desired"] == f"{rails[0]['ip']}/{rails[0]['prefix']}" and addr["aggregate"] == "unique"
    inet = f"5: {rails[0]['netdev']}    inet {rails[0]['ip']}/{rails[0]['prefix']} scope global x"
    assert re.search(addr["extract"], inet).group(1) == addr["desired"]
    none = render(
        "rdma", expressions={"s": "{{ _rdma_link_settings }}"}, variables={"rdma_configure_addresses": False}
    )
    assert [s["name"] for s in none["s"]] == [n for n in names if not n.endswith("IPv4 address")]
    ib = render("rdma", host="ib-01", expressions={"s": "{{ _rdma_link_settings }}"})["s"]
    assert ib == []  # IPoIB rails without addresses: nothing of theirs is set here


def test_rail_ports_read_once_and_judged_per_rail() -> None:
    """tasks/ports.yml reads every rail port's link_layer and state with one `grep -H '' -- FILES`; the
    checks find a wrong link layer, an unreadable port (grep's own stderr line) and an InfiniBand port that
    is not ACTIVE, naming each by HCA and port."""
    two = render("rdma", host="ib-01", expressions={"r": "{{ rdma_rails }}"})["r"]
    rails = [*two, dict(two[1], index=2, hca="mlx5_2", netdev="ibp79s0")]  # a third rail, as on an 8-rail SKU
    base = [f"/sys/class/infiniband/{r['hca']}/ports/{r.get('port', 1)}" for r in rails]
    out = [f"{b}/link_layer:InfiniBand\n{b}/state:4: ACTIVE" for b in base[2:]]
    out[0] = out[0].replace("4: ACTIVE", "2: INIT")  # rail 2 up but not ACTIVE (no subnet manager)
    lines = [f"{base[0]}/link_layer:Ethernet", f"{base[0]}/state:4: ACTIVE", *"\n".join(out).splitlines()]
    missing = f"grep: {base[1]}/link_layer: No such file or directory"
    registered = {
        "rc": 2,
        "stdout_lines": lines,
        "stderr_lines": [missing, missing.replace("link_layer", "state")],
    }
    got = render(
        "rdma",
        host="ib-01",
        variables={"_rdma_ports": registered, "rdma_rails": rails},
        expressions={"bad": "{{ _rdma_port_bad }}", "inactive": "{{ _rdma_port_inactive }}"},
    )
    h0, h1, h2 = (r["hca"] for r in rails[:3])
    assert got["bad"] == [
        f"{h0}:1 is Ethernet, planned InfiniBand",
        f"{h1}:1 is unreadable: {missing}, planned InfiniBand",
    ]
    assert got["inactive"] == [f"{h2}:1 2: INIT"]
    healthy = {
        "rc": 0,
        "stdout_lines": [ln for b in base for ln in (f"{b}/link_layer:InfiniBand", f"{b}/state:4: ACTIVE")],
    }
    ok = render(
        "rdma",
        host="ib-01",
        variables={"_rdma_ports": healthy, "rdma_rails": rails},
        expressions={"bad": "{{ _rdma_port_bad }}", "inactive": "{{ _rdma_port_inactive }}"},
    )
    assert ok == {"bad": [], "inactive": []}
