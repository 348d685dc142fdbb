"""Inventory vars of the `bios` role, rendered from the plan (wired into `inventory.all_vars`).

Per host the role needs only `clusterforge_bmc` ({address, vendor}; already a host var when the plan node
has a BMC). Cluster-wide it needs the vendor maps resolved against the plan's tuning policy, and the CA
bundle of BMCs whose certificates no system CA signs, when the target names one (the lab: its own CA; TLS
verification stays on).
"""

from __future__ import annotations

from typing import Any

from clusterforge.spec import bios


def all_vars(doc: dict[str, Any], ca_path: str | None = None) -> dict[str, Any]:
    """`bios_vendor_maps` for every vendor that a node of this plan has (all vendors when none has a BMC,
    so a host added by hand still finds its map), plus `bios_ca_path` when the target gives one."""
    used = sorted({n["bmc"]["vendor"] for n in doc["nodes"] if n.get("bmc")}) or list(bios.VENDORS)
    out: dict[str, Any] = {"bios_vendor_maps": {v: bios.inventory_map(v, doc["tuning"]) for v in used}}
    if ca_path:
        out["bios_ca_path"] = ca_path
    return out
