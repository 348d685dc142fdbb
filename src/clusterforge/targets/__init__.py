"""Deployment targets: the registry (`for_plan`) of the implementations of `Target`.

The flows ask the plan's target to prepare the nodes, for the inventory's target-specific variables, the
environment of the processes that reach the nodes, and the pool manager; nothing else in clusterforge
branches on `plan["target"]`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clusterforge.errors import ClusterforgeError
from clusterforge.lab.target import LabTarget
from clusterforge.pool.base import PoolManager
from clusterforge.pool.managers import manager_for
from clusterforge.targets.baremetal import BareMetal
from clusterforge.targets.base import Target

REGISTRY: dict[str, Callable[[], Target]] = {
    "baremetal": BareMetal,
    "lab": lambda: LabTarget(manager_for),
}


def for_plan(plan_doc: Mapping[str, Any]) -> Target:
    """The target `plan_doc["target"]` names (the spec allows only the names registered here)."""
    name = str(plan_doc.get("target"))
    if name not in REGISTRY:
        raise ClusterforgeError(f"unknown target {name!r}: one of {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()


def pool_manager(
    plan_doc: Mapping[str, Any], kind: str | None = None, registry: Path | None = None
) -> PoolManager:
    """The plan's pool manager as its target reaches it (`clusterforge pool`, the flows)."""
    return for_plan(plan_doc).pool_manager(plan_doc, kind, registry)


__all__ = ["REGISTRY", "BareMetal", "Target", "for_plan", "pool_manager"]
