"""What a deployment target adds to the generated inventory, as data (`clusterforge.targets` makes it,
`plan.inventory.all_vars` writes it). A module of its own: targets import it without the plan compiler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class InventoryOverrides:
    """What the deployment target adds to the generated inventory (`clusterforge.targets`): the lab's root
    login, SSH key and known hosts, its slurmctld and munge key (`all_vars`), and its BMCs' CA bundle
    (`bios_ca_path`). Empty for bare metal: the site layer (inventory/site/) holds a site's own."""

    all_vars: Mapping[str, Any] = field(default_factory=dict)
    bios_ca_path: str | None = None
