"""The inventory as every run reads it: the generated layer, the site layer over it, the hosts a limit
selects and each node's SSH connection variables.

The site layer holds an operator's own inventory variables, which `clusterforge plan` never writes.

`clusterforge plan` replaces `inventory/generated/<cluster>/` whole. What a site adds of its own — SSH user,
port, key, jump host, repository mirrors, any role variable — goes in `inventory/site/<cluster>/`
(`group_vars/*.yml`, `host_vars/<node>.yml`; or the folder named by `CLUSTERFORGE_SITE`), beside the
generated one. Every run reads both, the site layer last, so its values win: Ansible (provision, drift),
certification and burn-in's SSH connections (`connection_vars`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

#: Ansible's Python API is not thread-safe (its plugin loader fills module-level caches on first use: two
#: threads loading the inventory at once failed with "Unable to load the cache plugin
#: 'ansible.builtin.memory' … No module named 'ansible_collections'", seen in a drift whose validators and
#: applied-state reads each open their SSH setup). Every in-process use of it holds this lock.
ANSIBLE_API = threading.Lock()

SITE_ENV = "CLUSTERFORGE_SITE"


def site_layer(inventory: Path) -> Path | None:
    """The site folder for the generated inventory folder `inventory` (None when there is none)."""
    env = os.environ.get(SITE_ENV)
    folder = Path(env) if env else inventory.resolve().parent.parent / "site" / inventory.resolve().name
    if not folder.is_dir():
        return None
    if not any((folder / d).is_dir() for d in ("group_vars", "host_vars")):
        return None
    return folder


def inventory_sources(inventory: Path, scratch: Path) -> list[str]:
    """Ansible inventory sources for a run: the generated hosts.yml, then the site layer.

    The site folder holds only variables; Ansible reads group_vars/host_vars beside an inventory source,
    so `scratch` gets an empty source with links to them (nothing is written in the site folder)."""
    inventory = inventory.resolve()
    hosts = inventory / "hosts.yml" if inventory.is_dir() else inventory
    site = site_layer(inventory if inventory.is_dir() else inventory.parent)
    if site is None:
        return [str(hosts)]
    shim = scratch / "site"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "hosts.yml").write_text("all: {}\n")
    for d in ("group_vars", "host_vars"):
        if (site / d).is_dir() and not (shim / d).exists():
            (shim / d).symlink_to((site / d).resolve())
    return [str(hosts), str(shim / "hosts.yml")]


CONNECTION_VARS = (
    "ansible_host",
    "ansible_user",
    "ansible_port",
    "ansible_ssh_private_key_file",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
)


def connection_vars(sources: list[str], nodes: list[str]) -> dict[str, dict[str, Any]]:
    """Each node's SSH connection variables as Ansible resolves them over every layer (templated)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    out: dict[str, dict[str, Any]] = {}
    with ANSIBLE_API:
        loader = DataLoader()
        inv = InventoryManager(loader=loader, sources=sources)
        vm = VariableManager(loader=loader, inventory=inv)
        for name in nodes:
            host = inv.get_host(name)
            if host is None:
                out[name] = {}
                continue
            hv = vm.get_vars(host=host, include_hostvars=False)
            templar = Templar(loader=loader, variables=hv)
            out[name] = {k: templar.template(hv[k]) for k in CONNECTION_VARS if k in hv}
    return out


def resolve_hosts(inventory: Path, limit: str | None) -> list[str]:
    """Hosts the limit pattern selects, in inventory order (Ansible's own pattern rules)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    with ANSIBLE_API:
        inv = InventoryManager(loader=DataLoader(), sources=[str(inventory / "hosts.yml")])
        if limit:
            inv.subset(limit)
        return [h.name for h in inv.get_hosts("all")]


def plan_order(hosts: list[str], plan_doc: dict[str, Any]) -> list[str]:
    """Hosts in the plan's order (pools, racks, SUs), so batches follow the physical layout."""
    order = {n["name"]: i for i, n in enumerate(plan_doc["nodes"])}
    return sorted(hosts, key=lambda h: (order.get(h, len(order)), h))
