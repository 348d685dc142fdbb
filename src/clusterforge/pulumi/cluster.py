"""GpuCluster: the top component of the `cluster` stack; everything else is parented under it.

GpuCluster
├── ManagementNetwork, StorageNetwork
├── ComputeFabric (one per fabric) ── FabricSwitch (one per switch) [── remote.Command: QoS push]
├── a target that stands up its nodes (the lab) only: command.local.Command "<cluster>-lab-infra"
│   (clusterforge lab infra up|down)
└── NodePool (one per pool) ── GpuNode (one per node) [── lab: command.local.Command "<node>-lab"]

Whether the target stands up its nodes is data the program passes (`Target.stands_up_nodes`).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_command import local

from clusterforge.plan import Plan
from clusterforge.pulumi.lab import infra_commands, infra_digest
from clusterforge.pulumi.networks import ComputeFabric, ManagementNetwork, StorageNetwork
from clusterforge.pulumi.nodes import BmcCredentials, LabContext, NodePool
from clusterforge.pulumi.settings import StackSettings

TOKEN = "clusterforge:index:{}"


class GpuCluster(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        plan: Plan,
        settings: StackSettings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        stands_up_nodes: bool = False,
    ) -> None:
        super().__init__(TOKEN.format("GpuCluster"), name, None, opts)
        doc = plan.doc
        child = pulumi.ResourceOptions(parent=self)
        self.management = ManagementNetwork(f"{name}-mgmt", doc, child)
        self.storage = StorageNetwork(f"{name}-storage", doc, child) if doc["networks"]["storage"] else None
        self.fabrics = {
            f["name"]: ComputeFabric(f["name"], doc, settings.switch_push, child) for f in doc["fabrics"]
        }
        self.lab_infra: local.Command | None = None
        lab: LabContext | None = None
        if stands_up_nodes:
            cmds = infra_commands(settings.cli, settings.spec_value, settings.sudo)
            self.lab_infra = local.Command(
                f"{name}-lab-infra",
                create=cmds.create,
                delete=cmds.delete,
                dir=str(settings.repo_root),
                triggers=[infra_digest(doc)],
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
            )
            lab = LabContext(
                cli=settings.cli,
                spec=settings.spec_value,
                sudo=settings.sudo,
                repo_root=settings.repo_root,
                infra=self.lab_infra,
            )
        bmc = BmcCredentials(settings.bmc_username, settings.bmc_password) if settings.bmc_password else None
        self.pools = {p["name"]: NodePool(p["name"], doc, lab, bmc, child) for p in doc["pools"]}
        self.nodes = {n: node for pool in self.pools.values() for n, node in pool.nodes.items()}
        outputs: dict[str, Any] = {
            "cluster": plan.name,
            "target": doc["target"],
            "plan_hash": plan.plan_hash,
            "nodes": len(self.nodes),
            "pools": sorted(self.pools),
            "fabrics": sorted(self.fabrics),
        }
        if self.lab_infra is not None:
            outputs["lab_infra"] = self.lab_infra.id
        self.register_outputs(outputs)
