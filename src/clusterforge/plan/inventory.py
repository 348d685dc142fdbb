"""Render the Ansible inventory: hosts.yml (groups + per-host vars) and group_vars (cluster-wide, per SKU)."""

from __future__ import annotations

from typing import Any

from clusterforge.plan import bios_vars
from clusterforge.plan.build import Plan
from clusterforge.plan.overrides import InventoryOverrides
from clusterforge.plan.slurm_files import render_gres_conf, render_topology_conf
from clusterforge.remote import checker_bundle


def group_name(prefix: str, value: object) -> str:
    return f"{prefix}_{str(value).replace('-', '_')}"


def host_vars(node: dict[str, Any], sku_desired: dict[str, Any] | None = None) -> dict[str, Any]:
    """A node's own vars; its compiled desired state only when it differs from its SKU's (group_vars)."""
    own = node.get("desired")
    return {
        "ansible_host": node["mgmt_ip"],
        "clusterforge_node": node["name"],
        "clusterforge_pool": node["pool"],
        "clusterforge_sku": node["sku"],
        "clusterforge_rack": node["rack"],
        "clusterforge_su": node["su"],
        "clusterforge_fabric": node["fabric"],
        "clusterforge_fabric_type": node["fabric_type"],
        "clusterforge_mgmt_ip": node["mgmt_ip"],
        "clusterforge_mgmt_netdev": node["mgmt_netdev"],
        "clusterforge_rails": node["rails"],
        "clusterforge_expectation_digest": node["expectation_digest"],
        **({"clusterforge_bmc": node["bmc"]} if node.get("bmc") else {}),
        **(
            {"clusterforge_desired": own}
            if own is not None and own is not sku_desired and own != sku_desired
            else {}
        ),
    }


def hosts_yml(plan: Plan) -> dict[str, Any]:
    """The inventory as a YAML-ready dict. Hosts carry their vars once, under their pool group."""
    groups: dict[str, dict[str, Any]] = {}

    def member(group: str, host: str, hvars: dict[str, Any] | None = None) -> None:
        groups.setdefault(group, {"hosts": {}})["hosts"][host] = hvars

    doc = plan.doc
    desired = sku_desired(plan)
    for n in doc["nodes"]:
        member(group_name("pool", n["pool"]), n["name"], host_vars(n, desired.get(n["sku"])))
        member(group_name("sku", n["sku"]), n["name"])
        member(group_name("rack", n["rack"]), n["name"])
        member(group_name("su", f"{n['fabric']}_{n['su']}"), n["name"])
        member(group_name("fabric", n["fabric"]), n["name"])
        member(group_name("fabric_type", n["fabric_type"]), n["name"])
        member(group_name("target", doc["target"]), n["name"])
    return {"all": {"children": dict(sorted(groups.items()))}}


def all_vars(plan: Plan, overrides: InventoryOverrides | None = None) -> dict[str, Any]:
    """Cluster-wide facts plus the role knobs derived from the spec (docs/contracts.md), then what the
    target adds (`overrides`)."""
    d = plan.doc
    t, sw = d["tuning"], d["software"]
    out: dict[str, Any] = {
        "clusterforge_cluster": d["cluster"],
        "clusterforge_plan_hash": d["plan_hash"],
        "clusterforge_target": d["target"],
        "clusterforge_pool_manager": d["pool_manager"],
        "clusterforge_software": sw,
        "clusterforge_tuning": t,
        # threshold overrides are already merged into each SKU's clusterforge_sku_spec (group_vars/sku_*.yml),
        # link-counter limits compiled into each SKU's clusterforge_desired
        "clusterforge_certification": {
            k: v for k, v in d["certification"].items() if k not in ("thresholds", "link_counters")
        },
        "clusterforge_rollout_serial": d["rollout"]["serial"],
        "clusterforge_rollout_max_fail_percentage": d["rollout"]["max_fail_percentage"],
        # kernel command line, hugepages, C-states, governor, THP, sysctls, limits, services, ACS, the RDMA
        # stack, rail MTUs, RoCE QoS, the time servers and the pinned driver: compiled per SKU
        # (clusterforge_desired, plan/desired.py), not knobs
        "nvidia_gpu_ecc_enabled": t["ecc"],
        "nvidia_gpu_mig_enabled": t["mig"],
        "rdma_rails": "{{ clusterforge_rails }}",
        "rdma_ipoib_addresses": True,
        "nccl_socket_ifname": "{{ clusterforge_mgmt_netdev }}",
        "nccl_net_gdr_level": "PXB",
        # the node checker program, written beside the inventory (flows/plan.py, inventory from-stack)
        "monitoring_checker_bundle": "{{ inventory_dir }}/" + checker_bundle.INVENTORY_FILE,
        **repository_vars(sw.get("repositories") or {}),
        **slurm_vars(d),
    }
    overrides = overrides or InventoryOverrides()
    out.update(overrides.all_vars)
    out.update(bios_vars.all_vars(d, overrides.bios_ca_path))
    return out


def slurm_vars(d: dict[str, Any]) -> dict[str, Any]:
    """gres.conf and topology.conf for the slurm_node role, rendered from the plan (plan/slurm_files.py)."""
    if d.get("pool_manager") != "slurm":
        return {}
    return {"slurm_node_gres_conf": render_gres_conf(d), "slurm_node_topology_conf": render_topology_conf(d)}


def repository_vars(repos: dict[str, Any]) -> dict[str, Any]:
    """Role knobs from `software.repositories`: only what the spec sets (the roles' defaults otherwise)."""
    out: dict[str, Any] = {
        "repositories_apt_proxy": repos.get("apt_proxy") or "",
        "repositories_no_proxy": list(repos.get("no_proxy") or []),
    }
    for key in ("distribution_mirror", "security_mirror"):
        if repos.get(key):
            out[f"repositories_{key}"] = repos[key]
    for key, prefix in (("vendor", "nvidia_gpu_apt"), ("doca", "rdma_doca_apt")):
        r = repos.get(key)
        if not r:
            continue
        out[f"{prefix}_repo"] = r["url"]
        out[f"{prefix}_suite"] = r.get("suite", "/")
        out[f"{prefix}_components"] = list(r.get("components") or [])
        out[f"{prefix}_repo_trusted"] = bool(r.get("trusted"))
        if r.get("key_url"):
            out[f"{prefix}_key_url"] = r["key_url"]
    return out


def roce_vars(plan: Plan) -> dict[str, Any]:
    """Vars of group fabric_type_roce: NCCL ignores RDMA-CM's default ToS, so it gets its own."""
    return {"nccl_ib_tc": plan.doc["tuning"]["roce"]["tos"], "nccl_ib_gid_index": 3}


def sku_desired(plan: Plan) -> dict[str, dict[str, Any]]:
    """The compiled desired state of each SKU's nodes (plan/desired.py: a function of the SKU and the
    tuning), taken from its first node; SKUs without nodes have none."""
    out: dict[str, dict[str, Any]] = {}
    for n in plan.doc["nodes"]:
        if n["sku"] not in out and "desired" in n:
            out[n["sku"]] = n["desired"]
    return out


def sku_vars(sku: dict[str, Any], desired: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "clusterforge_sku_spec": sku,
        **({"clusterforge_desired": desired} if desired is not None else {}),
        "nvidia_gpu_fabricmanager_enabled": bool(sku["gpu"]["nvswitch"]),
        "rdma_link_layer": sku["compute_nics"]["link_layer"],
    }


def sku_group_vars(plan: Plan) -> dict[str, dict[str, Any]]:
    """group_vars/sku_<name>.yml contents keyed by file stem."""
    desired = sku_desired(plan)
    return {
        group_name("sku", name): sku_vars(sku, desired.get(name)) for name, sku in plan.doc["skus"].items()
    }
