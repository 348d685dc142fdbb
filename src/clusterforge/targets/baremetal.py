"""Bare metal: machines that exist before any run, reached as the inventory (and its site layer) says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.plan.overrides import InventoryOverrides
from clusterforge.pool.base import PoolManager
from clusterforge.pool.managers import manager_for


class BareMetal:
    name = "baremetal"
    stands_up_nodes = False

    def prepare(self, plan_doc: dict[str, Any], console: Console) -> None:
        """Nothing to stand up: an unreachable node is reported by the run itself, per node."""

    def inventory_overrides(self, plan_doc: Mapping[str, Any]) -> InventoryOverrides:
        return InventoryOverrides()  # a site's SSH user, key, jump host: inventory/site/<cluster>/

    def environment(self, plan_doc: Mapping[str, Any]) -> dict[str, str]:
        return {}  # SLURM_CONF, a BMC account: the operator's own environment

    def pool_manager(
        self, plan_doc: Mapping[str, Any], kind: str | None = None, registry: Path | None = None
    ) -> PoolManager:
        return manager_for(plan_doc, kind, registry)
