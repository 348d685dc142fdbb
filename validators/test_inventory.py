"""Part serials and tool versions for the certificate and the records (GPU serials, NIC node GUIDs)."""

from __future__ import annotations

import functools

import pytest

from clusterforge.certify.checks import CheckError, Probe, prefetches, read_many_cmd
from clusterforge.hw import ibstat
from clusterforge.hw.nvidia_smi import parse_q
from clusterforge.hw.packages import DPKG_QUERY_CMD, OS_RELEASE_CMD, RPM_QUERY_CMD, listing, os_family
from clusterforge.hw.pkgversion import compare
from clusterforge.plan.expect import NodeExpect

pytestmark = [pytest.mark.quick, pytest.mark.full, pytest.mark.burnin]

PACKAGES = {
    "nccl": ("libnccl2", "libnccl"),
    "dcgm": ("datacenter-gpu-manager",),
    "rdma-core": ("rdma-core",),
    "cuda": ("cuda-toolkit-", "cuda-runtime-", "cuda-cudart-"),
}


IB = "/sys/class/infiniband"
GUIDS = "*/node_guid"  # under IB


@prefetches
def commands(node: NodeExpect) -> list[str]:
    return [
        "nvidia-smi -q",
        read_many_cmd(IB, GUIDS),
        "ibstat",
        OS_RELEASE_CMD,
        DPKG_QUERY_CMD,
        RPM_QUERY_CMD,
    ]


def test_parts(node: NodeExpect, probe: Probe) -> None:
    """Every GPU's serial (nvidia-smi) and every rail NIC's node GUID (sysfs) is readable; recorded with the
    tool versions. The GUID stands for the NIC serial: it is burned into the adapter and unique."""
    q = probe.parse("nvidia-smi -q", parse_q)
    gpus = [
        {"index": i, "bus_id": g.bus_id, "serial": g.serial, "uuid": g.uuid, "model": g.product_name}
        for i, g in enumerate(q.gpus)
    ]
    missing = [g["bus_id"] for g in gpus if not g["serial"]]
    if missing:
        raise CheckError(f"no serial number reported for GPU(s) {', '.join(map(str, missing))}")
    guids = probe.read_many(IB, GUIDS)
    by_hca = {p.split("/")[4]: v for p, v in guids.items()}
    nics = [{"index": r.index, "hca": r.hca, "serial": by_hca[r.hca]} for r in node.rails if r.hca in by_hca]
    fw = {ca.name: ca.firmware_version for ca in probe.parse("ibstat", ibstat.parse)}
    pkgs = probe.parse(*listing(probe.parse(OS_RELEASE_CMD, os_family)))
    versions = {
        "nvidia_driver": q.driver_version,
        "cuda_driver_api": q.cuda_version or "",
        "nic_firmware": ",".join(sorted(set(fw.values()))),
    }
    for name, prefixes in PACKAGES.items():
        found = [
            v
            for p, vs in pkgs.installed.items()
            for v in vs
            if any(p == x or (x.endswith("-") and p.startswith(x)) or p.startswith(x + "-") for x in prefixes)
        ]
        if found:
            versions[name] = max(found, key=functools.cmp_to_key(lambda a, b: compare(pkgs.family, a, b)))
    probe.note("parts", {"gpu": gpus, "nic": nics})
    probe.note("tool_versions", versions)
