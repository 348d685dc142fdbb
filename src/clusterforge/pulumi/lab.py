"""The lab target's shell commands: what `pulumi up` / `pulumi destroy` run through `command.local.Command`.

They call the lab CLI (`clusterforge lab infra up|down SPEC`, `clusterforge lab node up|down SPEC NAME`);
the lab CLI plans the spec on the fly, so the commands need no generated files.
The lab needs root, hence the optional `sudo -n` (non-interactive: fails instead of prompting).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from clusterforge.plan.digest import sha256_of


@dataclass(frozen=True)
class LabCommands:
    create: str
    delete: str


def _prefix(cli: str, sudo: bool) -> str:
    return ("sudo -n " if sudo else "") + shlex.quote(cli)


def infra_commands(cli: str, spec: str, sudo: bool) -> LabCommands:
    base = f"{_prefix(cli, sudo)} lab infra"
    return LabCommands(create=f"{base} up {shlex.quote(spec)}", delete=f"{base} down {shlex.quote(spec)}")


def node_commands(cli: str, spec: str, sudo: bool, node: str) -> LabCommands:
    base = f"{_prefix(cli, sudo)} lab node"
    n, s = shlex.quote(node), shlex.quote(spec)
    return LabCommands(create=f"{base} up {s} {n}", delete=f"{base} down {s} {n}")


def infra_digest(plan_doc: dict[str, Any]) -> str:
    """What the shared lab pieces are built from: cluster, networks, fabrics (name, type, rails), pools.

    Adding or changing a node leaves it alone (only that node's command is replaced); renaming the cluster or
    changing a network rebuilds the infrastructure, and with it every node (delete-before-replace).
    """
    return sha256_of(
        {
            "cluster": plan_doc["cluster"],
            "networks": plan_doc["networks"],
            "fabrics": [
                {"name": f["name"], "type": f["type"], "rails": f["rails"]} for f in plan_doc["fabrics"]
            ],
            "pool_manager": plan_doc["pool_manager"],
            "software": plan_doc["software"],
        }
    )
