"""plan/desired.py: the one place a node's desired settings are derived (the cases the os_tuning role's Jinja
used to compute), and how the desired state travels with the plan."""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.plan import desired as D
from clusterforge.plan.desired_monitoring import monitoring_input
from clusterforge.plan.desired_network import management_input
from clusterforge.plan.expect import DESIRED_VERSION as READ_VERSION
from clusterforge.spec.model import Certification, Software

# The spec defaults of what the monitoring state reads (dcgm_exporter, health_interval_s)
DEFAULT_PINS = monitoring_input(
    {"dcgm_exporter": Software.model_fields["dcgm_exporter"].default},
    {"health_interval_s": Certification.model_fields["health_interval_s"].default},
)

# the management network as a spec declares it (fabrics.management, no addressing.gateway)
MGMT = management_input({"speed_gbps": 10, "mtu": 1500}, None)
MGMT_NIC = {"count": 1, "speed_gbps": 10, "netdev": "mgmt0"}

INTEL = {"cpu": {"vendor": "intel", "numa_nodes": 2}}


def tuning(**kw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "hugepages": {"size": "1G", "count": 16, "per_numa": True},
        "cstate_max": 1,
        "governor": "performance",
        "thp": "madvise",
        "numa_balancing": False,
        "iommu": "pt",
        "tuned_profile": "latency-performance",
        "irqbalance": True,
        "acs_disable": True,
        "roce": {
            "lossless_priority": 3,
            "dscp": 26,
            "cnp_dscp": 48,
            "cnp_priority": 6,
            "mtu": 9000,
            "ecn": True,
            "tos": 106,
        },
    }
    t.update(kw)
    return t


@pytest.mark.parametrize(
    ("sku", "t", "expected"),
    [
        (  # the SKU's vendor decides, never the node's facts
            {"cpu": {"vendor": "amd", "numa_nodes": 2}},
            tuning(),
            [
                "processor.max_cstate=1",
                "iommu=pt",
                "default_hugepagesz=1G",
                "hugepagesz=1G",
                "hugepages=0:8,1:8",
            ],
        ),
        (
            INTEL,
            tuning(hugepages={"size": "1G", "count": 0, "per_numa": True}),
            ["intel_idle.max_cstate=0", "processor.max_cstate=1", "iommu=pt"],
        ),
        (
            INTEL,
            tuning(hugepages={"size": "1G", "count": 16, "per_numa": False}, cstate_max=0, iommu="off"),
            [
                "intel_idle.max_cstate=0",
                "processor.max_cstate=1",
                "iommu=off",
                "default_hugepagesz=1G",
                "hugepagesz=1G",
                "hugepages=16",
            ],
        ),
        (
            INTEL,
            tuning(iommu="on", hugepages={"size": "2M", "count": 1024, "per_numa": False}),
            [
                "intel_idle.max_cstate=0",
                "processor.max_cstate=1",
                "iommu=nopt",
                "intel_iommu=on",
                "default_hugepagesz=2M",
                "hugepagesz=2M",
                "hugepages=1024",
            ],
        ),
        (  # an odd count: the first NUMA nodes take one more
            INTEL,
            tuning(hugepages={"size": "1G", "count": 17, "per_numa": True}),
            [
                "intel_idle.max_cstate=0",
                "processor.max_cstate=1",
                "iommu=pt",
                "default_hugepagesz=1G",
                "hugepagesz=1G",
                "hugepages=0:9,1:8",
            ],
        ),
        (  # per_numa on a single-NUMA SKU is the plain count; arm64: iommu.passthrough, no ACPI C-state
            {"cpu": {"vendor": "arm", "numa_nodes": 1}},
            tuning(iommu="on"),
            ["iommu.passthrough=0", "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=16"],
        ),
        (
            {"cpu": {"vendor": "arm", "numa_nodes": 2}},
            tuning(),
            ["iommu.passthrough=1", "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=0:8,1:8"],
        ),
    ],
)
def test_kernel_cmdline(sku: dict[str, Any], t: dict[str, Any], expected: list[str]) -> None:
    sku = {**sku, "name": "s", "compute_nics": {"link_layer": "InfiniBand"}, "management_nic": MGMT_NIC}
    desired = D.node_desired(sku, t, [], monitoring=DEFAULT_PINS, link_counters={}, management=MGMT)
    assert desired["kernel"]["cmdline"] == expected


def test_per_numa_split_is_count_over_numa_nodes() -> None:
    hp = D.hugepages(tuning(hugepages={"size": "2M", "count": 10, "per_numa": True}), 4)
    assert hp == {"size": "2M", "size_kb": 2048, "total": 10, "per_numa": {"0": 3, "1": 3, "2": 2, "3": 2}}
    assert D.hugepages_param(hp) == "0:3,1:3,2:2,3:2"


def test_every_sysctl_as_the_kernel_shows_it() -> None:
    s = D.sysctls(tuning(numa_balancing=True))
    assert s["kernel.numa_balancing"] == "1" and s["vm.swappiness"] == "10"
    assert s["net.ipv4.tcp_rmem"] == "4096 87380 268435456"
    assert list(s) == sorted(s) and all(isinstance(v, str) for v in s.values())


def test_rail_mtus_are_two_named_values() -> None:
    ib = D.rail_desired({"index": 0, "netdev": "ib0", "hca": "mlx5_0", "link_layer": "InfiniBand"}, tuning())
    assert (
        (ib["netdev_mtu"], ib["port_mtu"], ib["qos"])
        == (D.IPOIB_MTU, D.IB_PORT_MTU, None)
        == (4092, 4096, None)
    )
    eth = {"index": 0, "netdev": "e0", "hca": "mlx5_0", "link_layer": "Ethernet"}
    roce = D.rail_desired(eth, tuning())
    assert (roce["netdev_mtu"], roce["port_mtu"]) == (9000, 4096)
    assert roce["qos"]["pfc_priorities"] == [3] and roce["qos"]["tos"] == 106
    small = tuning(roce={**tuning()["roce"], "mtu": 1500})
    assert D.rail_desired(eth, small)["port_mtu"] == 1024  # 1500 - 96 bytes of RoCE headers
    assert D.port_mtu("Ethernet", 4192) == 4096 and D.port_mtu("Ethernet", 4191) == 2048


def test_lab_plan_nodes_carry_it_and_their_rails_match(example) -> None:
    doc = example("lab").doc
    for n in doc["nodes"]:
        d = n["desired"]
        assert d["version"] == D.DESIRED_VERSION == READ_VERSION
        assert [r["netdev_mtu"] for r in d["rails"]] == [r["mtu"] for r in n["rails"]]
        assert [r["netdev"] for r in d["rails"]] == [r["netdev"] for r in n["rails"]]
    ib = next(n for n in doc["nodes"] if n["fabric_type"] == "infiniband")
    assert {r["netdev_mtu"] for r in ib["desired"]["rails"]} == {4092}


def test_expectation_digest_covers_the_desired_state(spec_text, plan_text, monkeypatch) -> None:
    base = plan_text(spec_text("lab"))
    monkeypatch.setattr(D, "SYSCTLS", {**D.SYSCTLS, "vm.swappiness": "1"})
    changed = plan_text(spec_text("lab"))
    a = {n["name"]: n["expectation_digest"] for n in base.doc["nodes"]}
    b = {n["name"]: n["expectation_digest"] for n in changed.doc["nodes"]}
    assert all(a[k] != b[k] for k in a)  # a compiler change moves every digest, though the spec did not


def test_modules_follow_rails_storage_qos_and_gds() -> None:
    """nvidia_peermem always; rdma_cm where RoCE QoS is applied (RoCE rails or lossless storage NICs);
    nvidia-fs with GPUDirect Storage; each with the modules-load.d file the role writes."""
    ib = [{"link_layer": "InfiniBand"}]
    assert [m["name"] for m in D.modules_desired(ib, None)] == ["nvidia_peermem"]
    assert [m["name"] for m in D.modules_desired([{"link_layer": "Ethernet"}], None)] == [
        "nvidia_peermem",
        "rdma_cm",
    ]
    from clusterforge.plan.desired_storage import NVIDIA_FS

    storage = {"nics": {"qos": {"trust": "dscp"}}, "gds": {"enabled": True, "module": NVIDIA_FS}}
    got = D.modules_desired(ib, storage)
    assert [(m["name"], m["sysfs"]) for m in got] == [
        ("nvidia_peermem", "nvidia_peermem"),
        ("rdma_cm", "rdma_cm"),
        ("nvidia-fs", "nvidia_fs"),
    ]
    assert (
        got[2]["boot_file"] == "/etc/modules-load.d/clusterforge-nvidia-fs.conf"
        and got[2]["role"] == "storage"
    )
