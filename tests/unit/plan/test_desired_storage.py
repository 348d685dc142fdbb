"""plan/desired_storage.py: mounts, LNet, scratch, GDS and floors compiled once per SKU from the spec."""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.plan import cabling
from clusterforge.plan import desired_storage as S
from clusterforge.plan.build import build_plan
from clusterforge.spec import load_spec, load_spec_text
from tests.conftest import CLUSTERS, without_storage

SKU = {
    "name": "h100-sxm-8x400g-ib",
    "storage_nics": {"count": 2, "speed_gbps": 200, "netdev": "stor0"},
    "management_nic": {"count": 1, "speed_gbps": 25, "netdev": "mgmt0"},
}
NET = {"type": "ethernet", "speed_gbps": 200, "nics_per_node": 2, "mtu": 9000, "vlan": None}
FLOORS = {
    k: None
    for k in ("seq_read_gbs", "seq_write_gbs", "randread_iops", "checkpoint_write_gbs", "min_free_gib")
}


def fs(**kw: Any) -> dict[str, Any]:
    base = {
        "name": "data",
        "type": "nfs",
        "servers": ["10.20.0.5"],
        "export": "/export/data",
        "metadata": None,
        "mountpoint": "/data",
        "options": [],
        "network": "storage",
        "transport": "tcp",
        "nconnect": None,
        "client_url": None,
        "client_sha256": None,
        "floors": dict(FLOORS),
    }
    base.update(kw)
    return base


def spec(shared: list[dict[str, Any]], scratch: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    s = {
        "shared": shared,
        "scratch": scratch,
        "gds": False,
        "io_test": {"size_gib": 4.0, "runtime_s": 20, "checkpoint_gib": 8.0},
        "floors_by_sku": {},
    }
    s.update(kw)
    return s


def compile_(s: dict[str, Any], net: dict[str, Any] | None = NET) -> dict[str, Any]:
    out = S.storage_desired(SKU, S.storage_input(s, net, "10.20.0.0/22" if net else None))
    assert out is not None
    return out


def test_no_storage_section_is_none() -> None:
    assert S.storage_desired(SKU, S.storage_input(None, NET, "10.20.0.0/22")) is None


def test_nfs_over_rdma_and_nconnect_options() -> None:
    (m,) = compile_(spec([fs(transport="rdma", options=["vers=4.2"])]))["mounts"]
    assert m["source"] == "10.20.0.5:/export/data" and m["fstype"] == "nfs"
    assert m["options"] == ["_netdev", "vers=4.2", "proto=rdma", "port=20049"]
    assert m["expect_options"] == ["rw", "proto=rdma"] and m["fstypes_seen"] == ["nfs", "nfs4"]
    (m,) = compile_(spec([fs(nconnect=8)]))["mounts"]
    assert m["options"] == ["_netdev", "nconnect=8"] and "nconnect=8" in m["expect_options"]


def test_lustre_source_and_lnet_over_the_storage_nics() -> None:
    lus = fs(type="lustre", servers=["10.20.3.250", "10.20.3.251"], export="lustre1", transport="rdma")
    d = compile_(
        spec([lus, fs(name="tcp", type="lustre", export="l2", mountpoint="/l2", network="management")])
    )
    assert d["mounts"][0]["source"] == "10.20.3.250@o2ib:10.20.3.251@o2ib:/lustre1"
    assert d["mounts"][1]["source"] == "10.20.0.5@tcp:/l2"
    assert d["lnet"] == {
        "networks": [
            {"net": "o2ib0", "interfaces": ["stor0", "stor1"]},
            {"net": "tcp0", "interfaces": ["mgmt0"]},
        ],
        "modprobe": "o2ib0(stor0,stor1),tcp0(mgmt0)",
        "cidr": "10.20.0.0/22",
    }
    assert compile_(spec([fs()]))["lnet"] is None


def test_weka_gpfs_and_juicefs_sources() -> None:
    weka = fs(type="weka", servers=["b1", "b2"], export="fs1", mountpoint="/weka")
    gpfs = fs(name="g", type="gpfs", servers=[], export="gpfs0", mountpoint="/gpfs")
    jfs = fs(
        name="j",
        type="juicefs",
        servers=[],
        export=None,
        metadata="redis://10.244.0.1:6379/1",
        mountpoint="/jfs",
        client_url="http://x/juicefs",
        client_sha256="a" * 64,
    )
    sc = {
        "devices": ["/dev/nvme1n1"],
        "raid": "none",
        "filesystem": "ext4",
        "mountpoint": "/raid",
        "options": ["noatime"],
        "floors": dict(FLOORS),
    }
    d = compile_(spec([weka, gpfs, jfs], sc))
    w, g, j = d["mounts"]
    assert (w["source"], w["fstype"]) == ("b1,b2/fs1", "wekafs")
    assert (g["source"], g["fstype"]) == ("gpfs0", "gpfs")
    assert (j["source"], j["fstypes_seen"]) == ("redis://10.244.0.1:6379/1", ["fuse.juicefs"])
    assert j["options"] == ["_netdev", "cache-dir=/raid/juicefs-cache"]
    assert d["juicefs"] == {"binary": "/usr/local/bin/juicefs", "url": "http://x/juicefs", "sha256": "a" * 64}
    assert d["types"] == ["gpfs", "juicefs", "weka"]
    own = compile_(spec([dict(jfs, options=["cache-dir=/var/jfs"])], sc))["mounts"][0]
    assert own["options"] == ["_netdev", "cache-dir=/var/jfs"]


def test_scratch_single_device_and_raid0() -> None:
    one = {
        "devices": ["/dev/nvme1n1"],
        "raid": "none",
        "filesystem": "xfs",
        "mountpoint": "/raid",
        "options": ["noatime"],
        "floors": dict(FLOORS, seq_read_gbs=5.0),
    }
    sc = compile_(spec([], one))["scratch"]
    assert sc["device"] == "/dev/nvme1n1" and sc["md_device"] is None and sc["raid"] == "none"
    assert sc["unit"] == "raid.mount" and sc["floors"] == {"seq_read_gbs": 5.0}
    two = dict(one, devices=["/dev/nvme1n1", "/dev/nvme2n1"], raid=0)
    sc = compile_(spec([], two))["scratch"]
    assert (sc["device"], sc["md_device"], sc["md_name"], sc["raid"]) == (
        "/dev/md/scratch",
        "/dev/md/scratch",
        "scratch",
        "raid0",
    )


def test_floors_by_sku_replace_the_targets_floors() -> None:
    one = {
        "devices": ["/dev/nvme1n1"],
        "raid": "none",
        "filesystem": "xfs",
        "mountpoint": "/raid",
        "options": [],
        "floors": dict(FLOORS, seq_read_gbs=5.0, min_free_gib=10.0),
    }
    over = {SKU["name"]: {"scratch": dict(FLOORS, seq_read_gbs=9.0), "data": dict(FLOORS, min_free_gib=1.0)}}
    d = compile_(spec([fs()], one, floors_by_sku=over))
    assert d["scratch"]["floors"] == {"seq_read_gbs": 9.0}
    assert d["mounts"][0]["floors"] == {"min_free_gib": 1.0}


def test_storage_nics_follow_the_network() -> None:
    assert compile_(spec([fs()]))["nics"] == {
        "netdevs": ["stor0", "stor1"],
        "mtu": 9000,
        "speed_gbps": 200,
        "cidr": "10.20.0.0/22",
    }
    assert compile_(spec([fs()]), dict(NET, nics_per_node=1))["nics"]["netdevs"] == ["stor0"]
    d = compile_(spec([fs(network="management")]), None)
    assert d["nics"] is None and d["mounts"][0]["netdevs"] == ["mgmt0"]
    assert compile_(spec([fs(network="management")]))["nics"] is None  # no filesystem over the storage NICs


@pytest.mark.parametrize(
    ("path", "unit"),
    [("/raid", "raid.mount"), ("/mnt/data", "mnt-data.mount"), ("/mnt/my-data", "mnt-my\\x2ddata.mount")],
)
def test_unit_names_as_systemd_escape(path: str, unit: str) -> None:
    assert S.unit_name(path) == unit


@pytest.mark.parametrize(
    ("base", "i", "netdev"),
    [("stor0", 0, "stor0"), ("stor0", 3, "stor3"), ("eth", 2, "eth2"), ("ens1f9", 1, "ens1f10")],
)
def test_nth_netdev_is_cablings_rule(base: str, i: int, netdev: str) -> None:
    assert S.nth_netdev is cabling.nth_netdev, "one rule for the storage desired state and the cabling sheet"
    assert S.nth_netdev(base, i) == netdev


def test_the_1su_example_plan_carries_storage() -> None:
    plan = build_plan(load_spec(CLUSTERS / "h100-ib-1su.yaml"))
    d = plan.nodes[0]["desired"]["storage"]
    assert [m["name"] for m in d["mounts"]] == ["lustre", "home"]
    assert d["scratch"]["raid"] == "raid0" and len(d["scratch"]["devices"]) == 8
    assert d["gds"]["enabled"] is True and d["lnet"]["modprobe"] == "o2ib0(stor0,stor1)"


def test_a_spec_without_storage_plans_none() -> None:
    text = without_storage((CLUSTERS / "lab.yaml").read_text(encoding="utf-8"))
    plan = build_plan(load_spec_text(text, "lab.yaml"))
    assert all(n["desired"]["storage"] is None for n in plan.nodes)


def test_the_lab_plan_carries_what_the_lab_serves() -> None:
    d = build_plan(load_spec(CLUSTERS / "lab.yaml")).nodes[0]["desired"]["storage"]
    assert [(m["type"], m["fstypes_seen"], m["target"]) for m in d["mounts"]] == [
        ("juicefs", ["fuse.juicefs"], "/shared")
    ]
    assert "cache-dir=/scratch/juicefs-cache" in d["mounts"][0]["options"]  # the client cache on scratch
    assert (d["scratch"]["raid"], d["scratch"]["device"]) == ("none", "/dev/disk/by-id/nvme-lab-scratch")


def test_lossless_storage_nics_carry_the_rails_qos_object() -> None:
    from clusterforge.plan.desired import roce_qos

    tuning = {
        "roce": {
            "lossless_priority": 3,
            "dscp": 26,
            "cnp_dscp": 48,
            "cnp_priority": 6,
            "ecn": True,
            "tos": 106,
            "mtu": 9000,
        }
    }
    qos = roce_qos(tuning)
    d = S.storage_desired(SKU, S.storage_input(spec([fs()]), dict(NET, lossless=True), "10.20.0.0/22"), qos)
    assert (
        d is not None
        and d["nics"]["qos"] == qos
        and d["nics"]["qos"]["pfc_vector"] == [0, 0, 0, 1, 0, 0, 0, 0]
    )
    # not lossless (or lossless: false): no qos key at all, so existing plans are unchanged
    assert "qos" not in compile_(spec([fs()]))["nics"]
    assert "qos" not in compile_(spec([fs()]), dict(NET, lossless=False))["nics"]


def test_a_lossless_plan_gives_storage_nics_the_same_qos_as_the_rails() -> None:
    text = (CLUSTERS / "lab.yaml").read_text(encoding="utf-8")
    net = "  storage: {speed_gbps: 200, nics_per_node: 2, mtu: 9000}\n"
    assert net in text
    text = text.replace(net, net.replace("mtu: 9000}", "mtu: 9000, lossless: true}"))
    text = text.replace("      network: management\n", "      network: storage\n")
    plan = build_plan(load_spec_text(text, "lab.yaml"))
    n = next(n for n in plan.nodes if any(r["qos"] for r in n["desired"]["rails"]))
    rail_qos = next(r["qos"] for r in n["desired"]["rails"] if r["qos"])
    assert n["desired"]["storage"]["nics"]["qos"] == rail_qos
    assert plan.doc["networks"]["storage"]["lossless"] is True
    base = build_plan(load_spec(CLUSTERS / "lab.yaml"))
    assert "lossless" not in base.doc["networks"]["storage"]
