"""The `cluster` stack's program: config -> spec -> plan -> GpuCluster, and the stack outputs.

`stacks/cluster/__main__.py` only calls `main(repo_root)`; tests call `build()` under Pulumi's mocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from clusterforge import targets
from clusterforge.plan import Plan
from clusterforge.plan.inventory import all_vars, hosts_yml, roce_vars, sku_group_vars
from clusterforge.plan.summary import summary
from clusterforge.pulumi.cluster import GpuCluster
from clusterforge.pulumi.settings import StackSettings, load_settings, plan_from_settings
from clusterforge.switchcfg import switch_configs

REQUIRED_OUTPUTS = ("cluster", "plan_hash", "inventory", "group_vars")


def group_vars(plan: Plan) -> dict[str, dict[str, Any]]:
    """group_vars/<file>.yml contents keyed by file stem, exactly what `clusterforge plan` writes (with what
    the plan's target adds)."""
    overrides = targets.for_plan(plan.doc).inventory_overrides(plan.doc)
    out: dict[str, dict[str, Any]] = {"all": all_vars(plan, overrides), "fabric_type_roce": roce_vars(plan)}
    out.update(sku_group_vars(plan))
    return out


def cabling(plan: Plan) -> dict[str, Any]:
    """Port-level cabling per fabric, as plan data (one row per cable; fields named once)."""
    return {f["name"]: {"link_fields": f["link_fields"], "links": f["links"]} for f in plan.doc["fabrics"]}


def bmc_output(cluster: GpuCluster) -> pulumi.Output[dict[str, Any]] | None:
    creds = {name: node.bmc_credentials for name, node in cluster.nodes.items() if node.bmc_credentials}
    return pulumi.Output.all(**creds) if creds else None  # secret: built from secret config


def stack_outputs(plan: Plan, cluster: GpuCluster, settings: StackSettings) -> dict[str, Any]:
    outs: dict[str, Any] = {
        "cluster": plan.name,
        "target": plan.doc["target"],
        "spec": settings.spec_value,
        "plan_hash": plan.plan_hash,
        "inventory": hosts_yml(plan),
        "group_vars": group_vars(plan),
        "fabric": summary(plan),
        "switch_configs": switch_configs(plan.doc),
        "cabling": cabling(plan),
    }
    bmc = bmc_output(cluster)
    if bmc is not None:
        outs["bmc_credentials"] = bmc
    return outs


def build(repo_root: Path, cfg: pulumi.Config | None = None) -> tuple[GpuCluster, dict[str, Any]]:
    settings = load_settings(repo_root, cfg)
    plan = plan_from_settings(settings)
    target = targets.for_plan(plan.doc)
    cluster = GpuCluster(plan.name, plan, settings, stands_up_nodes=target.stands_up_nodes)
    return cluster, stack_outputs(plan, cluster, settings)


def main(repo_root: Path) -> None:
    _, outs = build(repo_root)
    for key, value in outs.items():
        pulumi.export(key, value)
