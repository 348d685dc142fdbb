"""The target interface: what a deployment target gives the flows. Implementations: bare metal
(`clusterforge.targets.baremetal`) and the local lab (`clusterforge.lab.target`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from clusterforge.plan.overrides import InventoryOverrides
from clusterforge.pool.base import PoolManager


class PoolFactory(Protocol):
    """`clusterforge.pool.managers.manager_for`, handed to targets outside this layer (the lab's)."""

    def __call__(
        self,
        plan_doc: Mapping[str, Any],
        kind: str | None = None,
        registry: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PoolManager: ...


class Target(Protocol):
    """Where a plan's nodes live and what reaching them takes."""

    name: str
    #: the target makes its machines itself (the lab: `clusterforge lab infra/node up`), so the Pulumi
    #: stack declares the commands that do it; bare metal machines exist before any run
    stands_up_nodes: bool

    def prepare(self, plan_doc: dict[str, Any], console: Console) -> None:
        """Make the nodes reachable before a run (the lab: stand it up; idempotent)."""

    def inventory_overrides(self, plan_doc: Mapping[str, Any]) -> InventoryOverrides:
        """What this target adds to the generated inventory (login, keys, service addresses, CA paths)."""

    def environment(self, plan_doc: Mapping[str, Any]) -> dict[str, str]:
        """Variables added to the environment of what runs from the controller against the nodes: Ansible,
        the validators, the pool manager's commands, burn-in's launcher (never a secret's value)."""

    def pool_manager(
        self, plan_doc: Mapping[str, Any], kind: str | None = None, registry: Path | None = None
    ) -> PoolManager:
        """The plan's pool manager (or `kind`), set up to reach this target's scheduler."""
