"""The lab as a deployment target (`clusterforge.targets`): stand it up, its SSH identity, slurmctld, munge
key and BMC CA in the inventory, its BMC account and slurm.conf in the environment of what reaches it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.lab import config
from clusterforge.plan.overrides import InventoryOverrides


class LabTarget:
    """`pools` is `clusterforge.pool.managers.manager_for` (`targets.base.PoolFactory`, handed in by the
    registry: the lab imports no pool module); `state_base` the lab's state root (default
    `$CLUSTERFORGE_LAB_STATE`, as the lab's own)."""

    name = "lab"
    stands_up_nodes = True

    def __init__(self, pools: Callable[..., Any], state_base: Path | None = None) -> None:
        self.pools = pools
        self.state_base = state_base or config.STATE_BASE

    def root(self, plan_doc: Mapping[str, Any]) -> Path:
        return self.state_base / str(plan_doc["cluster"])

    def prepare(self, plan_doc: dict[str, Any], console: Console) -> None:
        from clusterforge.extras import require

        require("lab", "a lab cluster")  # the BMC emulator and its web stack: the `lab` extra
        from clusterforge.lab.lab import Lab

        console.print("[bold]»[/] lab up (idempotent)")
        Lab(plan_doc, state_base=self.state_base).up()

    def inventory_overrides(self, plan_doc: Mapping[str, Any]) -> InventoryOverrides:
        root = self.root(plan_doc)
        return InventoryOverrides(
            all_vars={
                "ansible_user": "root",
                "ansible_ssh_private_key_file": f"{root}/ssh/id_ed25519",
                "ansible_ssh_common_args": (
                    f"-o UserKnownHostsFile={root}/ssh/known_hosts -o StrictHostKeyChecking=yes"
                ),
                # configless slurmd from the lab host's slurmctld, with the lab's munge key
                "slurm_node_conf_server": f"{config.HOST_IP}:{config.SLURMCTLD_PORT}",
                "slurm_node_munge_key_src": f"{root}/munge/munge.key",
            },
            bios_ca_path=f"{root}/bmc/ca.pem",  # written by clusterforge.lab.bmc.start_bmcs
        )

    def environment(self, plan_doc: Mapping[str, Any]) -> dict[str, str]:
        """The lab BMCs' account (unless the user set one) and the lab controller's slurm.conf (unless
        `SLURM_CONF` is set), once the lab made them."""
        from clusterforge.lab.bmc import client_env

        env = client_env(dict(plan_doc), state_base=self.state_base)
        conf = self.root(plan_doc) / "slurm" / "slurm.conf"
        if "SLURM_CONF" not in os.environ and conf.exists():
            env["SLURM_CONF"] = str(conf)
        return env

    def pool_manager(
        self, plan_doc: Mapping[str, Any], kind: str | None = None, registry: Path | None = None
    ) -> Any:  # a clusterforge.pool.PoolManager
        return self.pools(plan_doc, kind, registry, self.environment(plan_doc))
