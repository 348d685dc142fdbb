"""The spec's storage section: valid sections load, each mistake is one problem at its YAML path."""

from __future__ import annotations

import pytest

from clusterforge.errors import InputError, Problem
from clusterforge.spec import load_spec_text

from ._helpers import FILE, LAB, only, problems

NFS = """storage:
  shared:
    - name: home
      type: nfs
      servers: [10.246.0.2]
      export: /export/home
      mountpoint: /home
"""
GOOD = """storage:
  shared:
    - name: lustre
      type: lustre
      servers: [10.246.0.250, 10.246.0.251]
      export: lustre1
      mountpoint: /lustre
      transport: rdma
    - name: home
      type: nfs
      servers: [10.246.0.2]
      export: /export/home
      mountpoint: /home
      nconnect: 8
    - name: jfs
      type: juicefs
      metadata: redis://10.244.0.1:6379/1
      mountpoint: /jfs
      network: management
      client_url: http://10.244.0.1:8780/juicefs/juicefs
      client_sha256: "%s"
  scratch: {devices: [/dev/nvme1n1, /dev/nvme2n1], raid: 0, filesystem: xfs, mountpoint: /raid,
            floors: {seq_read_gbs: 10, min_free_gib: 100}}
  gds: true
  floors_by_sku:
    h100-sxm-8x400g-ib: {scratch: {seq_read_gbs: 20}}
""" % ("a" * 64)


def spec(section: str) -> str:
    return LAB + section


def test_a_full_storage_section_loads() -> None:
    s = load_spec_text(spec(GOOD), FILE).cluster.storage
    assert s is not None and [f.type for f in s.shared] == ["lustre", "nfs", "juicefs"]
    assert s.scratch is not None and s.scratch.raid == 0 and s.scratch.floors.seq_read_gbs == 10
    assert s.gds is True


def test_no_storage_section_is_none() -> None:
    assert load_spec_text(LAB, FILE).cluster.storage is None


@pytest.mark.parametrize(
    ("old", "new", "path", "found"),
    [
        ("      export: /export/home\n", "", "storage.shared[0].export", "none"),
        ("servers: [10.246.0.2]\n", "servers: []\n", "storage.shared[0].servers", "none"),
        ("export: /export/home", "export: export/home", "storage.shared[0].export", "export/home"),
        (
            "mountpoint: /home\n",
            "mountpoint: /home\n      nconnect: 4\n      transport: rdma\n",
            "storage.shared[0].nconnect",
            "transport rdma",
        ),
        (
            "mountpoint: /home\n",
            "mountpoint: /home\n      options: [nconnect=4]\n",
            "storage.shared[0].options[0]",
            "nconnect=4",
        ),
        (
            "mountpoint: /home\n",
            "mountpoint: /home\n      metadata: redis://10.0.0.1/1\n",
            "storage.shared[0].metadata",
            "redis://10.0.0.1/1",
        ),
    ],
)
def test_one_nfs_mistake_is_one_problem(old: str, new: str, path: str, found: str) -> None:
    p = only(spec(NFS.replace(old, new)))
    assert (p.path, p.found) == (path, found)
    assert p.fix and p.expected and p.line


def test_lustre_needs_addresses_and_a_short_fsname() -> None:
    text = spec(NFS.replace("type: nfs", "type: lustre").replace("/export/home", "averylongname"))
    text = text.replace("servers: [10.246.0.2]", "servers: [mgs.example.com]")
    found = {p.path: p for p in problems(text)}
    assert set(found) == {"storage.shared[0].export", "storage.shared[0].servers[0]"}
    assert "8 characters" in found["storage.shared[0].export"].expected


def test_juicefs_needs_metadata_and_client() -> None:
    text = spec(NFS.replace("type: nfs", "type: juicefs").replace("      servers: [10.246.0.2]\n", ""))
    text = text.replace("      export: /export/home\n", "")
    paths = sorted(p.path for p in problems(text))
    assert paths == [
        "storage.shared[0].client_sha256",
        "storage.shared[0].client_url",
        "storage.shared[0].metadata",
    ]


def test_rdma_is_refused_on_weka() -> None:
    text = spec(NFS.replace("type: nfs", "type: weka").replace("/export/home", "fs1") + "")
    text = text.replace("mountpoint: /home\n", "mountpoint: /home\n      transport: rdma\n")
    p = only(text)
    assert p.path == "storage.shared[0].transport"


def test_storage_network_must_exist() -> None:
    text = spec(NFS).replace("  storage: {speed_gbps: 200, nics_per_node: 2, mtu: 9000}\n", "")
    text = text.replace("  storage: 10.246.0.0/24\n", "")
    p = only(text)
    assert p.path == "storage.shared[0].network" and "fabrics.storage" in p.fix


def test_a_mount_point_used_twice() -> None:
    text = spec(NFS + "  scratch: {devices: [/dev/nvme1n1], mountpoint: /home}\n")
    p = only(text)
    assert p.path == "storage.scratch.mountpoint" and "storage.shared[0].mountpoint" in p.found


@pytest.mark.parametrize(
    ("scratch", "path"),
    [
        ("{devices: [/dev/nvme1n1], raid: 0}", "storage.scratch.raid"),
        ("{devices: [/dev/nvme1n1, /dev/nvme2n1]}", "storage.scratch.raid"),
        ("{devices: [/dev/nvme1n1, /dev/nvme1n1], raid: 0}", "storage.scratch.devices[1]"),
    ],
)
def test_scratch_devices_fit_the_raid_level(scratch: str, path: str) -> None:
    assert only(spec(f"storage:\n  scratch: {scratch}\n")).path == path


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("{devices: ['/dev/nvme1n1; rm -rf /']}", "storage.scratch.devices[0]"),
        ("{devices: [/dev/nvme1n1], mountpoint: relative}", "storage.scratch.mountpoint"),
        ("{devices: [/dev/nvme1n1], mountpoint: /a/../etc}", "storage.scratch.mountpoint"),
        ("{devices: [/dev/nvme1n1], options: ['noatime,exec']}", "storage.scratch.options[0]"),
        ("{devices: [/dev/nvme1n1], raid: 5}", "storage.scratch.raid"),
        ("{devices: [/dev/nvme1n1], filesystem: btrfs}", "storage.scratch.filesystem"),
        ("{devices: [/dev/nvme1n1], floors: {seq_read_gbs: -1}}", "storage.scratch.floors.seq_read_gbs"),
    ],
)
def test_hostile_or_wrong_values_are_refused(value: str, path: str) -> None:
    assert any(p.path == path for p in problems(spec(f"storage:\n  scratch: {value}\n")))


def test_floors_by_sku_name_a_sku_and_a_target() -> None:
    text = spec(
        NFS + "  floors_by_sku:\n    nope: {home: {seq_read_gbs: 1}}\n"
        "    h100-sxm-8x400g-ib: {scratch: {seq_read_gbs: 1}}\n"
    )
    paths = sorted(p.path for p in problems(text))
    assert paths == ["storage.floors_by_sku.h100-sxm-8x400g-ib.scratch", "storage.floors_by_sku.nope"]


def test_metadata_url_refuses_shell_characters() -> None:
    text = spec(GOOD.replace("redis://10.244.0.1:6379/1", "'redis://x/1;$(reboot)'"))
    assert any(p.path == "storage.shared[2].metadata" for p in problems(text))


def test_the_labs_storage_section_is_what_the_lab_serves() -> None:
    """lab.yaml's storage: one JuiceFS mount over the management network (lab nodes have no storage NICs)
    and one scratch disk by stable name, no RAID (no md in the lab's kernel) - what clusterforge.lab.storage
    serves (tests/unit/lab/test_lab_storage.py)."""
    from tests.conftest import CLUSTERS

    s = load_spec_text((CLUSTERS / "lab.yaml").read_text(encoding="utf-8"), FILE).cluster.storage
    assert s is not None and [(f.type, f.network) for f in s.shared] == [("juicefs", "management")]
    assert s.scratch is not None and s.scratch.raid == "none"
    assert s.scratch.devices == ["/dev/disk/by-id/nvme-lab-scratch"]


LOSSLESS_NET = "  storage: {speed_gbps: 200, nics_per_node: 2, mtu: 9000, lossless: true}\n"
STORAGE_NET = "  storage: {speed_gbps: 200, nics_per_node: 2, mtu: 9000}\n"


def test_lossless_storage_loads_with_a_filesystem_on_the_storage_network() -> None:
    c = load_spec_text(spec(NFS).replace(STORAGE_NET, LOSSLESS_NET), FILE).cluster
    assert c.fabrics.storage is not None and c.fabrics.storage.lossless is True
    assert load_spec_text(spec(NFS), FILE).cluster.fabrics.storage.lossless is False  # type: ignore[union-attr]


def test_lossless_storage_needs_a_filesystem_on_the_storage_network() -> None:
    p = only(
        spec(
            NFS.replace("      mountpoint: /home\n", "      mountpoint: /home\n      network: management\n")
        ).replace(STORAGE_NET, LOSSLESS_NET)
    )
    assert p.path == "fabrics.storage.lossless" and "storage.shared[].network: storage" in p.expected
    assert "remove lossless" in p.fix


def test_lossless_storage_needs_storage_nics() -> None:
    text = spec(NFS).replace(STORAGE_NET, LOSSLESS_NET.replace("nics_per_node: 2", "nics_per_node: 0"))
    found = problems(text)
    assert "fabrics.storage.nics_per_node" in [p.path for p in found]
    p = next(p for p in found if p.path == "fabrics.storage.nics_per_node")
    assert p.found == "0" and "remove lossless" in p.fix


def test_lossless_storage_needs_a_storage_address_range() -> None:
    text = spec(NFS).replace(STORAGE_NET, LOSSLESS_NET)
    found = problems(text.replace("  storage: 10.246.0.0/24\n", ""))
    p = next(p for p in found if p.path == "fabrics.storage.lossless")
    assert "addressing.storage" in p.expected and "addressing.storage" in p.fix


def test_lossless_storage_without_roce_compute_needs_tuning_roce() -> None:
    text = spec(NFS).replace(STORAGE_NET, LOSSLESS_NET)
    roce = "  roce: {lossless_priority: 3, dscp: 26, cnp_dscp: 48, cnp_priority: 6, mtu: 9000, ecn: true}\n"
    assert roce in text
    # the lab has a RoCE compute fabric: its tuning.roce is in use, so an implicit one is fine
    load_spec_text(text.replace(roce, ""), FILE)
    # an IB-only cluster must say what QoS its storage network is configured with
    ib_only = text.replace(roce, "").replace("type: roce\n", "type: infiniband\n")
    found = [p for p in _problems_or_none(ib_only) if p.path == "fabrics.storage.lossless"]
    assert len(found) == 1 and "tuning.roce" in found[0].expected and "tuning.roce" in found[0].fix
    assert not [
        p
        for p in _problems_or_none(text.replace("type: roce\n", "type: infiniband\n"))
        if p.path == "fabrics.storage.lossless"
    ]


def _problems_or_none(text: str) -> list[Problem]:
    try:
        load_spec_text(text, FILE)
    except InputError as e:
        return list(e.problems)
    return []
