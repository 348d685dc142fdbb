"""Inventory vars of the `bios` role, rendered from the plan (wired into `inventory.all_vars`).

Per host the role needs only `clusterforge_bmc` ({address, vendor}; already a host var when the plan node
has a BMC). Cluster-wide it needs the vendor maps resolved against the plan's tuning policy, and for
target `lab` the lab BMCs' CA bundle (TLS verification stays on against the lab's own CA).
"""

from __future__ import annotations

import os
from typing import Any

from clusterforge.spec import bios

LAB_ROOT = "/var/lib/clusterforge/lab"  # the lab's state root unless $CLUSTERFORGE_LAB_STATE names another


def lab_ca_path(cluster: str) -> str:
    """Where `clusterforge.lab.bmc.start_bmcs` writes the lab BMCs' CA certificate (under the lab's state
    root, `$CLUSTERFORGE_LAB_STATE` as the lab itself reads it)."""
    return f"{os.environ.get('CLUSTERFORGE_LAB_STATE') or LAB_ROOT}/{cluster}/bmc/ca.pem"


def all_vars(doc: dict[str, Any]) -> dict[str, Any]:
    """`bios_vendor_maps` for every vendor that a node of this plan has (all vendors when none has a BMC,
    so a host added by hand still finds its map), plus `bios_ca_path` for the lab."""
    used = sorted({n["bmc"]["vendor"] for n in doc["nodes"] if n.get("bmc")}) or list(bios.VENDORS)
    out: dict[str, Any] = {"bios_vendor_maps": {v: bios.inventory_map(v, doc["tuning"]) for v in used}}
    if doc["target"] == "lab":
        out["bios_ca_path"] = lab_ca_path(doc["cluster"])
    return out
