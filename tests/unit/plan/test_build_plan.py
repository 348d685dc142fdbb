"""The plan builder: nodes, addresses, rails, racks, per-node entries, and engine limits as input errors."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest

from clusterforge.errors import InputError
from clusterforge.plan import build_plan
from clusterforge.spec import catalog, load_spec_text


def test_lab_nodes_in_spec_order_with_addresses(example) -> None:
    p = example("lab")
    assert [n["name"] for n in p.doc["nodes"]] == ["roce-01", "roce-02", "ib-01", "ib-02"]
    # reserved: 10 -> node k of the cluster gets host 11 + k of each subnet
    assert [n["mgmt_ip"] for n in p.doc["nodes"]] == [
        "10.244.0.11",
        "10.244.0.12",
        "10.244.0.13",
        "10.244.0.14",
    ]
    assert [n["storage_ips"] for n in p.doc["nodes"]] == [
        ["10.246.0.11"],
        ["10.246.0.12"],
        ["10.246.0.13"],
        ["10.246.0.14"],
    ]
    ib2 = p.node("ib-02")
    # ib-02 is the second node of fabric ib0, whose rail r has subnet 10.245.(8+r).0/24
    assert [r["ip"] for r in ib2["rails"]] == [f"10.245.{8 + r}.12" for r in range(8)]
    assert {r["prefix"] for r in ib2["rails"]} == {24}
    assert (ib2["fabric"], ib2["fabric_type"], ib2["su"], ib2["rack"], ib2["ordinal"]) == (
        "ib0",
        "infiniband",
        1,
        "r01",
        3,
    )
    assert ib2["mgmt_mac"] == "02:cf:00:00:00:03"
    assert [r["mac"] for r in ib2["rails"]][:2] == ["02:cf:00:01:00:03", "02:cf:00:02:00:03"]


def test_rails_carry_the_gpu_nic_numa_map_and_fabric_ports(example) -> None:
    p = example("lab")
    for name, sku_name, mtu, layer in (
        ("roce-02", "h100-sxm-8x400g-roce", 9000, "Ethernet"),
        ("ib-01", "h100-sxm-8x400g-ib", 4092, "InfiniBand"),
    ):
        node = p.node(name)
        sku = catalog()[sku_name]
        assert [
            (r["index"], r["hca"], r["netdev"], r["pci"], r["gpu"], r["numa"]) for r in node["rails"]
        ] == [(r.rail, r.hca, r.netdev, r.pci, r.gpu, r.numa) for r in sku.compute_nics.rails]
        assert {(r["mtu"], r["link_layer"], r["speed_gbps"]) for r in node["rails"]} == {(mtu, layer, 400)}
        slot = int(name[-2:])  # nodes 1 and 2 of their fabric's SU 0 -> leaf ports 1 and 2
        fabric = node["fabric"]
        assert [(r["leaf"], r["leaf_port"]) for r in node["rails"]] == [
            (f"{fabric}-leaf-su0-r{r}", slot) for r in range(8)
        ]


def test_scalable_units_racks_and_pools(example) -> None:
    p = example("h100-ib-4su")
    su = {n["name"]: n["su"] for n in p.doc["nodes"]}
    assert (su["gpu-0001"], su["gpu-0032"], su["gpu-0033"], su["gpu-0128"]) == (1, 1, 2, 4)
    racks = p.doc["racks"]
    assert len(racks) == 32  # 128 nodes, 4 per rack
    assert racks[0] == {
        "name": "r01",
        "nodes": ["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0004"],
        "power_kw": 40.8,
    }
    assert p.doc["pools"] == [
        {
            "name": "gpu",
            "sku": "h100-sxm-8x400g-ib",
            "fabric": "ib0",
            "count": 128,
            "nodes": [f"gpu-{i:04d}" for i in range(1, 129)],
        }
    ]


def test_addresses_are_unique_and_inside_their_subnets(example) -> None:
    p = example("b200-ib-16su")
    nodes = p.doc["nodes"]
    mgmt = [n["mgmt_ip"] for n in nodes]
    assert len(set(mgmt)) == len(nodes) == 512
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.10.0.0/21") for ip in mgmt)
    nets = [ipaddress.ip_network(c) for c in p.doc["networks"]["compute"]["ib0"]]
    for r in range(8):
        ips = [n["rails"][r]["ip"] for n in nodes]
        assert len(set(ips)) == 512
        assert all(ipaddress.ip_address(ip) in nets[r] for ip in ips)
    macs = [n["mgmt_mac"] for n in nodes] + [r["mac"] for n in nodes for r in n["rails"]]
    assert len(set(macs)) == len(macs)


def test_sku_threshold_override_is_marked_in_the_plan(spec_text, plan_text, edit) -> None:
    text = edit(
        spec_text("lab"),
        "  join_tiers: [quick]\n",
        "  join_tiers: [quick]\n  thresholds:\n    h100-sxm-8x400g-ib: {allreduce_busbw_gbs: 400}\n",
    )
    p = plan_text(text)
    t = p.doc["skus"]["h100-sxm-8x400g-ib"]["thresholds"]["allreduce_busbw_gbs"]
    assert (t["value"], t["marker"], t["unit"]) == (400, "override", "GB/s")
    assert "certification.thresholds" in t["source"]
    assert p.doc["skus"]["h100-sxm-8x400g-roce"]["thresholds"]["allreduce_busbw_gbs"]["marker"] != "override"


BARE = """    fabric: ib0
    nodes:
      - name: ib-02
        management_ip: 10.244.0.200
        bmc: {address: 10.250.0.2, vendor: dell}
        macs: {mgmt: "0c:42:a1:00:00:01", ibp24s0: "0c:42:a1:00:00:02"}
"""


def test_per_node_entries_win_and_do_not_move_other_nodes(spec_text, plan_text, edit) -> None:
    p = plan_text(edit(spec_text("lab"), "    fabric: ib0\n", BARE))
    ib2 = p.node("ib-02")
    assert ib2["mgmt_ip"] == "10.244.0.200"
    assert ib2["bmc"] == {"address": "10.250.0.2", "vendor": "dell"}
    assert ib2["mgmt_mac"] == "0c:42:a1:00:00:01"
    assert ib2["rails"][0]["mac"] == "0c:42:a1:00:00:02"
    assert ib2["rails"][1]["mac"] == "02:cf:00:02:00:03"  # not given: generated
    assert [p.node(n)["mgmt_ip"] for n in ("roce-01", "roce-02", "ib-01")] == [
        "10.244.0.11",
        "10.244.0.12",
        "10.244.0.13",
    ]
    assert p.node("ib-01")["bmc"] is None


def test_explicit_address_taken_from_another_node_is_an_input_error(spec_text, edit) -> None:
    text = edit(spec_text("lab"), "    fabric: ib0\n", BARE.replace("10.244.0.200", "10.244.0.12"))
    with pytest.raises(InputError) as info:
        load_spec_text(text, "test.yaml")
    [p] = info.value.problems
    assert p.path == "pools[1].nodes[0].management_ip"
    assert p.found == "10.244.0.12, the automatic address of 'roce-02'"


# radix 8, su_size 2, 1:1, 8 rails, 16 nodes = 8 SUs: 128 endpoints = 8^3/4 and 2 + 2 ports per leaf, so the
# spec checks pass; but a spine takes at most 4 leaves, so each rail needs 2 pods: 16 pods > 8 core ports.
SMALL_SWITCH = [
    (
        '{model: QM9700, radix: 64, port_speed_gbps: 400}\n      oversubscription: "1:1"\n      su_size: 32',
        '{model: small, radix: 8, port_speed_gbps: 400}\n      oversubscription: "1:1"\n      su_size: 2',
    ),
    ('    count: 2\n    naming: "ib-', '    count: 16\n    naming: "ib-'),
    ("nodes_per_rack: 4", "nodes_per_rack: 18"),
    ("    power_kw: 45\n", "    power_kw: 45\n  cabling: {node_height_u: 2}\n"),  # 18 nodes fit the rack
]


def test_fabric_the_engine_cannot_wire_is_an_input_error(spec_text, edit) -> None:
    text = spec_text("lab")
    for old, new in SMALL_SWITCH:
        text = edit(text, old, new)
    text = text.replace("power_kw: 45", "power_kw: 200")
    spec = load_spec_text(text, "test.yaml")  # passes the spec checks
    with pytest.raises(InputError) as info:
        build_plan(spec)
    [p] = info.value.problems
    assert (p.file, p.path) == ("test.yaml", "fabrics.compute[1]")
    assert p.line == text.splitlines().index("    - name: ib0") + 1
    assert "cannot be wired as a three-tier fat tree" in p.found
    assert info.value.exit_code == 2


def test_max_tiers_is_enforced_on_the_planned_fabric(example) -> None:
    spec = example("b200-ib-16su").spec
    fab = spec.cluster.fabrics.compute[0].model_copy(update={"max_tiers": 2})
    cluster = spec.cluster.model_copy(
        update={"fabrics": spec.cluster.fabrics.model_copy(update={"compute": [fab]})}
    )
    with pytest.raises(InputError) as info:
        build_plan(dataclasses.replace(spec, cluster=cluster))
    [p] = info.value.problems
    assert p.path == "fabrics.compute[0].max_tiers"
    assert p.found.startswith("3 tiers needed (128 leaves, 4096 endpoints at radix 64)")


def test_max_tiers_is_checked_with_the_spec(spec_text, edit) -> None:
    text = edit(spec_text("b200-ib-16su"), "      su_size: 32\n", "      su_size: 32\n      max_tiers: 2\n")
    with pytest.raises(InputError) as info:
        load_spec_text(text, "test.yaml")
    [p] = info.value.problems
    assert p.path == "fabrics.compute[0].max_tiers"
    assert p.found == "4096 endpoints, 128 leaves"
    assert "radix >= 128" in p.fix
