"""Node components: NodePool (one per spec pool) and GpuNode (one per node of the plan).

On bare metal a GpuNode records an existing machine (management IP/MAC, BMC address, rails, expectation
digest) as component outputs: nothing is created, so no provider is needed (docs/stacks.md). In the lab it
owns a `command.local.Command` that boots/stops the simulated node, replaced when the node's expectation
digest changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi_command import local

from clusterforge.pulumi.lab import node_commands

TOKEN = "clusterforge:index:{}"


@dataclass(frozen=True)
class LabContext:
    """What a lab node's command needs: the CLI, the spec as the stack names it, the repo root, the infra."""

    cli: str
    spec: str
    sudo: bool
    repo_root: Path
    infra: pulumi.Resource


@dataclass(frozen=True)
class BmcCredentials:
    username: str | None
    password: pulumi.Output[str] | None


def node_facts(node: dict[str, Any], target: str) -> dict[str, Any]:
    """The plain (non-secret) outputs of a GpuNode."""
    return {
        "name": node["name"],
        "target": target,
        "pool": node["pool"],
        "sku": node["sku"],
        "rack": node["rack"],
        "su": node["su"],
        "fabric": node["fabric"],
        "fabric_type": node["fabric_type"],
        "mgmt_ip": node["mgmt_ip"],
        "mgmt_mac": node["mgmt_mac"],
        "mgmt_netdev": node["mgmt_netdev"],
        "storage_ips": node["storage_ips"],
        "bmc": node.get("bmc"),
        "rails": node["rails"],
        "expectation_digest": node["expectation_digest"],
    }


class GpuNode(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        node: dict[str, Any],
        target: str,
        lab: LabContext | None = None,
        bmc: BmcCredentials | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN.format("GpuNode"), name, None, opts)
        facts = node_facts(node, target)
        self.mgmt_ip = pulumi.Output.from_input(str(node["mgmt_ip"]))
        self.expectation_digest = pulumi.Output.from_input(str(node["expectation_digest"]))
        outputs: dict[str, Any] = dict(facts)
        self.lab_command: local.Command | None = None
        if lab is not None:
            cmds = node_commands(lab.cli, lab.spec, lab.sudo, name)
            self.lab_command = local.Command(
                f"{name}-lab",
                create=cmds.create,
                delete=cmds.delete,
                dir=str(lab.repo_root),
                triggers=[node["expectation_digest"]],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[lab.infra], delete_before_replace=True),
            )
            outputs["lab_command"] = self.lab_command.id
        self.bmc_credentials: pulumi.Output[dict[str, Any]] | None = None
        if bmc is not None and bmc.password is not None and node.get("bmc"):
            address = node["bmc"]["address"]
            # the password comes from config.get_secret: apply() keeps the result secret
            self.bmc_credentials = bmc.password.apply(
                lambda pw: {"address": address, "username": bmc.username, "password": pw}
            )
            outputs["bmc_credentials"] = self.bmc_credentials
        self.register_outputs(outputs)


class NodePool(pulumi.ComponentResource):
    """One pool of the spec (same SKU, same fabric): its GpuNodes as children."""

    def __init__(
        self,
        name: str,
        plan_doc: dict[str, Any],
        lab: LabContext | None = None,
        bmc: BmcCredentials | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN.format("NodePool"), name, None, opts)
        pool = next(p for p in plan_doc["pools"] if p["name"] == name)
        members = [n for n in plan_doc["nodes"] if n["pool"] == name]
        self.nodes: dict[str, GpuNode] = {
            n["name"]: GpuNode(
                n["name"], n, plan_doc["target"], lab, bmc, pulumi.ResourceOptions(parent=self)
            )
            for n in members
        }
        self.register_outputs(
            {
                "sku": pool["sku"],
                "fabric": pool["fabric"],
                "count": len(members),
                "nodes": [n["name"] for n in members],
            }
        )
