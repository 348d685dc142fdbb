"""The generated inventory as Ansible itself reads it (InventoryManager + VariableManager + group_vars)."""

from __future__ import annotations

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager

from clusterforge.flows.plan import write_outputs


@pytest.fixture(scope="module")
def lab_inventory(example, tmp_path_factory):
    dest = write_outputs(example("lab"), tmp_path_factory.mktemp("gen"), svg=False)
    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=[str(dest / "hosts.yml")])
    return inv, VariableManager(loader=loader, inventory=inv)


def test_groups_resolve(lab_inventory) -> None:
    inv, _ = lab_inventory
    names = lambda g: sorted(h.name for h in inv.groups[g].get_hosts())  # noqa: E731
    assert names("all") == ["ib-01", "ib-02", "roce-01", "roce-02"]
    assert names("fabric_type_roce") == ["roce-01", "roce-02"]
    assert names("sku_h100_sxm_8x400g_ib") == ["ib-01", "ib-02"]
    assert names("su_ib0_1") == ["ib-01", "ib-02"]
    assert names("rack_r01") == ["ib-01", "ib-02", "roce-01", "roce-02"]
    assert sorted(g.name for g in inv.get_host("roce-01").get_groups()) == [
        "all",
        "fabric_roce0",
        "fabric_type_roce",
        "pool_roce",
        "rack_r01",
        "sku_h100_sxm_8x400g_roce",
        "su_roce0_1",
        "target_lab",
    ]


def test_host_and_group_vars_resolve(lab_inventory) -> None:
    inv, vm = lab_inventory
    roce = vm.get_vars(host=inv.get_host("roce-01"))
    ib = vm.get_vars(host=inv.get_host("ib-02"))
    # per host
    assert (roce["ansible_host"], ib["ansible_host"]) == ("10.244.0.11", "10.244.0.14")
    assert [r["netdev"] for r in ib["clusterforge_rails"]][:2] == ["ibp24s0", "ibp64s0"]
    assert ib["clusterforge_rails"][7]["gpu"] == 7 and ib["clusterforge_rails"][7]["numa"] == 1
    # per SKU, through group_vars/sku_*.yml
    assert roce["clusterforge_sku_spec"]["name"] == "h100-sxm-8x400g-roce"
    assert ib["clusterforge_sku_spec"]["name"] == "h100-sxm-8x400g-ib"
    assert ib["clusterforge_sku_spec"]["thresholds"]["allreduce_busbw_gbs"]["value"] == 460
    assert (roce["rdma_link_layer"], ib["rdma_link_layer"]) == ("Ethernet", "InfiniBand")
    # RoCE-only knobs only on RoCE hosts (group_vars/fabric_type_roce.yml)
    assert (roce["nccl_ib_tc"], roce["nccl_ib_gid_index"]) == (106, 3)
    assert "nccl_ib_tc" not in ib and "nccl_ib_gid_index" not in ib
    # cluster-wide values compiled into each SKU's desired state
    assert roce["clusterforge_desired"]["time"] == ib["clusterforge_desired"]["time"]
    # the compiled desired state per SKU (group_vars/sku_*.yml): QoS on RoCE rails only
    assert roce["clusterforge_desired"]["rails"][0]["qos"]["pfc_vector"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert ib["clusterforge_desired"]["rails"][0]["qos"] is None
    assert roce["clusterforge_plan_hash"] == ib["clusterforge_plan_hash"]
    assert roce["ansible_user"] == "root"
