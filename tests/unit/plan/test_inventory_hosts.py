"""hosts.yml: groups by pool, SKU, rack, SU, fabric; per-host vars; SKU expectations only in group_vars."""

from __future__ import annotations

from typing import Any

import yaml

from clusterforge.plan.inventory import (
    all_vars,
    group_name,
    host_vars,
    hosts_yml,
    roce_vars,
    sku_desired,
    sku_vars,
)
from clusterforge.plan.outputs import hosts_yml_lines
from clusterforge.spec.sku import Thresholds


def _groups(plan) -> dict[str, list[str]]:
    return {g: list(v["hosts"]) for g, v in hosts_yml(plan)["all"]["children"].items()}


def test_groups_by_pool_sku_rack_su_fabric_and_target(example) -> None:
    g = _groups(example("lab"))
    roce, ib = ["roce-01", "roce-02"], ["ib-01", "ib-02"]
    assert g == {
        "fabric_ib0": ib,
        "fabric_roce0": roce,
        "fabric_type_infiniband": ib,
        "fabric_type_roce": roce,
        "pool_ib": ib,
        "pool_roce": roce,
        "rack_r01": roce + ib,
        "sku_h100_sxm_8x400g_ib": ib,
        "sku_h100_sxm_8x400g_roce": roce,
        "su_ib0_1": ib,
        "su_roce0_1": roce,
        "target_lab": roce + ib,
    }


def test_su_and_rack_groups_on_four_sus(example) -> None:
    g = _groups(example("h100-ib-4su"))
    assert [len(g[f"su_ib0_{i}"]) for i in range(1, 5)] == [32, 32, 32, 32]
    assert g["su_ib0_2"][0] == "gpu-0033"
    assert sum(1 for k in g if k.startswith("rack_")) == 32
    assert g["target_baremetal"] == g["pool_gpu"] == g["fabric_ib0"]
    assert len(g["pool_gpu"]) == 128


def test_host_vars_hold_addresses_and_the_gpu_nic_numa_map(example) -> None:
    p = example("lab")
    inv = hosts_yml(p)["all"]["children"]
    hv = inv["pool_roce"]["hosts"]["roce-02"]
    assert hv == host_vars(p.node("roce-02"), sku_desired(p)["h100-sxm-8x400g-roce"])
    assert "clusterforge_desired" not in hv  # the SKU's group_vars carry it: every node of the SKU shares it
    assert hv["ansible_host"] == hv["clusterforge_mgmt_ip"] == "10.244.0.12"
    assert (hv["clusterforge_mgmt_netdev"], hv["clusterforge_fabric_type"]) == ("mgmt0", "roce")
    rail = hv["clusterforge_rails"][4]
    assert {k: rail[k] for k in ("index", "hca", "netdev", "gpu", "numa", "ip", "prefix")} == {
        "index": 4,
        "hca": "mlx5_4",
        "netdev": "enp154s0np0",
        "gpu": 4,
        "numa": 1,
        "ip": "10.245.4.12",
        "prefix": 24,
    }
    assert len(hv["clusterforge_expectation_digest"]) == 64
    # vars are given once, under the pool group; the other groups only list the host
    assert all(
        v is None for g, body in inv.items() if not g.startswith("pool_") for v in body["hosts"].values()
    )


def _keys_and_strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(map(str, value)) | {s for v in value.values() for s in _keys_and_strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _keys_and_strings(v)}
    return {value} if isinstance(value, str) else set()


def test_no_host_var_contains_thresholds(example) -> None:
    names = set(Thresholds.model_fields) | {"thresholds", "clusterforge_sku_spec", "ib_error_counters_max"}
    for plan in (example("lab"), example("h100-roce-2su")):
        for body in hosts_yml(plan)["all"]["children"].values():
            for hv in body["hosts"].values():
                assert not names & _keys_and_strings(hv or {})
        assert not names & _keys_and_strings(all_vars(plan))


def test_sku_expectations_live_in_the_sku_group_vars(example) -> None:
    p = example("lab")
    ib = sku_vars(p.doc["skus"]["h100-sxm-8x400g-ib"])
    roce = sku_vars(p.doc["skus"]["h100-sxm-8x400g-roce"])
    assert ib["clusterforge_sku_spec"]["thresholds"]["ib_write_bw_gbps"]["value"] == 380
    assert ib["clusterforge_sku_spec"]["thresholds"]["ib_write_bw_gbps"]["source"]
    assert (ib["rdma_link_layer"], roce["rdma_link_layer"]) == ("InfiniBand", "Ethernet")
    assert ib["nvidia_gpu_fabricmanager_enabled"] is True
    assert group_name("sku", "h100-sxm-8x400g-ib") == "sku_h100_sxm_8x400g_ib"


def test_role_knobs_in_all_vars(example) -> None:
    from clusterforge import targets

    lab_plan = example("lab")
    lab = all_vars(lab_plan, targets.for_plan(lab_plan.doc).inventory_overrides(lab_plan.doc))
    bare = all_vars(example("h100-ib-1su"))
    # compiled, not passed as knobs for the role to derive from (plan/desired.py, group_vars/sku_*)
    compiled = {"os_tuning_hugepages_count", "os_tuning_thp", "os_tuning_iommu", "os_tuning_cstate_max"}
    compiled |= {"os_tuning_governor", "os_tuning_tuned_profile", "os_tuning_irqbalance_enabled"}
    compiled |= {"nvidia_gpu_acs_disable", "rdma_stack", "rdma_stack_version"}
    compiled |= {"rdma_roce_lossless_priority", "rdma_roce_dscp", "rdma_roce_mtu", "rdma_roce_ecn"}
    compiled |= {"nvidia_gpu_driver_branch", "nvidia_gpu_driver_version"}
    assert not compiled & set(lab) and not any(k.startswith("rdma_roce_") for k in lab)
    assert lab["ansible_user"] == "root" and "/lab/ssh/id_ed25519" in lab["ansible_ssh_private_key_file"]
    assert "ansible_user" not in all_vars(lab_plan), "the lab's login comes from its target, not the plan"
    assert "ansible_user" not in bare and bare["clusterforge_target"] == "baremetal"
    assert roce_vars(example("lab")) == {"nccl_ib_tc": 106, "nccl_ib_gid_index": 3}


def test_hosts_yml_text_loads_back_to_the_inventory(example) -> None:
    for name in ("lab", "h100-ib-4su"):
        p = example(name)
        text = "".join(hosts_yml_lines(p))
        assert text.startswith("# Generated by `clusterforge plan`")
        assert yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) == hosts_yml(p)
