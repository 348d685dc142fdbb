"""A plan.json shaped per docs/contracts.md, made without the planner: for tests and benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from clusterforge.lab import names

CATALOG = Path(__file__).resolve().parent.parent / "spec" / "catalog"
SKUS = {
    "roce": ("h100-sxm-8x400g-roce", "roce0", "roce", "Ethernet"),
    "ib": ("h100-sxm-8x400g-ib", "ib0", "infiniband", "InfiniBand"),
}


def _sku(name: str) -> dict[str, Any]:
    f = CATALOG / f"{name}.yaml"
    if f.exists():
        return dict(yaml.safe_load(f.read_text()))
    netdev = "ibp{}s0" if "-ib" in name else "enp{}s0np0"
    return {
        "name": name,
        "management_nic": {"netdev": "mgmt0"},
        "compute_nics": {
            "rails": [
                {
                    "rail": i,
                    "hca": f"mlx5_{i}",
                    "netdev": netdev.format(24 + i * 16),
                    "gpu": i,
                    "numa": i // 4,
                    "pci": f"0000:{24 + i:02x}:00.0",
                }
                for i in range(8)
            ]
        },
    }


def _rails(
    sku: dict[str, Any], fabric: str, ftype: str, layer: str, ordinal: int, host: int, port: int
) -> list[dict[str, Any]]:
    base = 8 if ftype == "infiniband" else 0
    return [
        {
            "index": r["rail"],
            "hca": r["hca"],
            "port": 1,
            "netdev": r["netdev"],
            "pci": r["pci"],
            "gpu": r["gpu"],
            "numa": r["numa"],
            "ip": f"10.245.{r['rail'] + base}.{host}",
            "prefix": 24,
            "mtu": 9000,
            "link_layer": layer,
            "speed_gbps": 400,
            "leaf": f"{fabric}-su1-l{r['rail']}",
            "leaf_port": port,
            "mac": names.lab_mac(1 + r["rail"], ordinal),
        }
        for r in sku["compute_nics"]["rails"]
    ]


def make_plan(
    pools: dict[str, int] | None = None, cluster: str = "lab", first_ip: int = 11, first_ordinal: int = 0
) -> dict[str, Any]:
    """pools: {"roce": n, "ib": m} → nodes roce-01.., ib-01.. with the catalog SKUs' rails. A plan that
    runs beside another lab takes other addresses (`first_ip`) and ordinals (`first_ordinal`: its MACs)."""
    pools = pools if pools is not None else {"roce": 2, "ib": 2}
    skus: dict[str, dict[str, Any]] = {}
    nodes = []
    ordinal = first_ordinal
    for pool, count in pools.items():
        sku_name, fabric, ftype, layer = SKUS[pool]
        sku = skus.setdefault(sku_name, _sku(sku_name))
        mgmt = (sku.get("management_nic") or {}).get("netdev", "mgmt0")
        for i in range(count):
            host = first_ip + ordinal - first_ordinal
            if host > 254:
                raise ValueError("the lab's management /24 holds at most 243 nodes")
            nodes.append(
                {
                    "name": f"{pool}-{i + 1:02d}",
                    "pool": pool,
                    "sku": sku_name,
                    "rack": "r01",
                    "su": 1,
                    "fabric": fabric,
                    "fabric_type": ftype,
                    "ordinal": ordinal,
                    "mgmt_ip": f"10.244.0.{host}",
                    "mgmt_netdev": mgmt,
                    "mgmt_mac": names.lab_mac(0, ordinal),
                    "storage_ips": [f"10.246.0.{host}"],
                    "bmc": None,
                    "rails": _rails(sku, fabric, ftype, layer, ordinal, host, i + 1),
                    "expectation_digest": "0" * 64,
                }
            )
            ordinal += 1
    return {
        "schema_version": 1,
        "cluster": cluster,
        "plan_hash": "synthetic",
        "target": "lab",
        "pool_manager": "slurm",
        "skus": skus,
        "nodes": nodes,
        "fabrics": [],
        "racks": [],
        "networks": {},
    }
