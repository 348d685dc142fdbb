"""The pool manager a plan names: file, slurm or kubernetes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from clusterforge.errors import InputError, Problem
from clusterforge.extras import require
from clusterforge.pool.base import PoolManager

MANAGERS = ("file", "slurm", "kubernetes")


def manager_for(
    plan_doc: dict[str, Any], kind: str | None = None, registry: Path | None = None
) -> PoolManager:
    """The pool manager the plan names (or `kind`). Slurm: `SLURM_CONF` from the environment; for a lab
    plan without it, the lab controller's slurm.conf."""
    kind = kind or str(plan_doc.get("pool_manager") or "file")
    cluster = str(plan_doc.get("cluster", "default"))
    if kind == "file":
        from clusterforge.pool.file import FilePool, default_registry

        return FilePool(registry or default_registry(cluster))
    if kind == "slurm":
        from clusterforge.pool.slurm import SlurmPool

        env = dict(os.environ)
        if "SLURM_CONF" not in env and plan_doc.get("target") == "lab":
            from clusterforge.lab.config import state_root

            conf = state_root(cluster) / "slurm" / "slurm.conf"
            if conf.exists():
                env["SLURM_CONF"] = str(conf)
        return SlurmPool(env=env)
    if kind == "kubernetes":
        require("kubernetes", "the kubernetes pool manager")
        from clusterforge.pool.kubernetes import KubernetesPool

        return KubernetesPool()
    raise InputError(
        [Problem("--manager", "", " | ".join(MANAGERS), repr(kind), "name one of the pool managers")],
        "unknown pool manager",
    )
