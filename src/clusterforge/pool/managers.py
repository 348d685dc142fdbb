"""Which pool manager a plan names: the one lookup (`manager_for`). The deployment target
(`clusterforge.targets`) calls it with its environment (the lab: its slurmctld's `SLURM_CONF`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.pool.base import PoolManager

MANAGERS = ("file", "slurm", "kubernetes")


class UnknownManager(ClusterforgeError):
    exit_code = ExitCode.BAD_INPUT


def manager_for(
    plan_doc: Mapping[str, Any],
    kind: str | None = None,
    registry: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> PoolManager:
    """The pool manager the plan names (or `kind`). Slurm's commands run with this process's environment
    plus `env` (what the target adds, e.g. `SLURM_CONF`)."""
    kind = kind or str(plan_doc.get("pool_manager") or "file")
    cluster = str(plan_doc.get("cluster", "default"))
    if kind == "file":
        from clusterforge.pool.file import FilePool, default_registry

        return FilePool(registry or default_registry(cluster))
    if kind == "slurm":
        from clusterforge.pool.slurm import SlurmPool

        return SlurmPool(env={**os.environ, **(env or {})})
    if kind == "kubernetes":
        from clusterforge.extras import require

        require("kubernetes", "the kubernetes pool manager")
        from clusterforge.pool.kubernetes import KubernetesPool

        return KubernetesPool()
    raise UnknownManager(f"pool manager must be one of {', '.join(MANAGERS)}; got {kind!r}")
