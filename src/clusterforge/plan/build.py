"""Compile a validated spec into the plan: nodes, addresses, fabrics, racks, expectations.

Pure and deterministic: the same spec gives a byte-identical plan.json (no clock, no paths, no env).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterforge.plan.addressing import Allocator, mac, management_ips
from clusterforge.plan.digest import sha256_of
from clusterforge.plan.fabric import Fabric, FabricInput, plan_fabric
from clusterforge.spec.layout import node_slots, rack_name
from clusterforge.spec.load import Spec

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Plan:
    """The compiled plan: `doc` is what plan.json holds; `fabrics` keeps the rich fabric objects."""

    doc: dict[str, Any]
    fabrics: dict[str, Fabric]
    spec: Spec

    @property
    def name(self) -> str:
        return str(self.doc["cluster"])

    @property
    def plan_hash(self) -> str:
        return str(self.doc["plan_hash"])

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return list(self.doc["nodes"])

    def node(self, name: str) -> dict[str, Any]:
        for n in self.doc["nodes"]:
            if n["name"] == name:
                return dict(n)
        raise KeyError(name)


def _skus(spec: Spec) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    overrides = spec.cluster.certification.thresholds
    for name, sku in sorted(spec.skus.items()):
        d = sku.model_dump(mode="json")
        for key, value in sorted(overrides.get(name, {}).items()):
            d["thresholds"][key] = {**d["thresholds"][key], "value": value,
                                    "source": "spec override (certification.thresholds)", "marker": "override"}
        out[name] = d
    return out


def _tuning(spec: Spec) -> dict[str, Any]:
    t = spec.cluster.tuning.model_dump(mode="json")
    t["roce"]["tos"] = spec.cluster.tuning.roce.tos
    return t


def build_plan(spec: Spec) -> Plan:
    c = spec.cluster
    slots = node_slots(c)
    pools = {p.name: p for p in c.pools}
    fabrics_spec = {f.name: f for f in c.fabrics.compute}
    skus = _skus(spec)
    tuning = _tuning(spec)
    software = c.software.model_dump(mode="json")
    mgmt = dict(zip([s.name for s in slots], management_ips(c, [s.name for s in slots]), strict=True))
    storage = Allocator(c.addressing.storage, c.addressing.reserved) if c.addressing.storage else None
    entries = {n.name: n for p in c.pools for n in p.nodes}

    # fabrics: nodes in spec order per fabric
    fabric_nodes: dict[str, list[str]] = {f: [] for f in fabrics_spec}
    for s in slots:
        fabric_nodes[pools[s.pool].fabric].append(s.name)
    fabrics: dict[str, Fabric] = {}
    for fname, fs in fabrics_spec.items():
        names = fabric_nodes[fname]
        if not names:
            continue
        sku = spec.skus[next(p.sku for p in c.pools if p.fabric == fname)]
        fabrics[fname] = plan_fabric(FabricInput(
            name=fname, kind=fs.type, nodes=tuple(names), rails=sku.compute_nics.count, su_size=fs.su_size,
            radix=fs.switch.radix, port_speed_gbps=fs.switch.port_speed_gbps, oversubscription=fs.ratio,
            switch_model=fs.switch.model))
    rail_alloc = {f: [Allocator(net, c.addressing.reserved) for net in c.addressing.compute.get(f, [])]
                  for f in fabrics}
    su_of = {f: {n: i // fabrics_spec[f].su_size + 1 for i, n in enumerate(names)}
             for f, names in fabric_nodes.items()}

    sku_digest = {name: sha256_of({"sku": d, "tuning": tuning, "software": software}) for name, d in skus.items()}
    nodes: list[dict[str, Any]] = []
    for s in slots:
        pool = pools[s.pool]
        sku = spec.skus[pool.sku]
        fab = fabrics[pool.fabric]
        entry = entries.get(s.name)
        rails = []
        for r in sku.compute_nics.rails:
            leaf, port = fab.node_ports[(s.name, r.rail)]
            ip = rail_alloc[pool.fabric][r.rail].take()
            rails.append({
                "index": r.rail, "hca": r.hca, "port": 1, "netdev": r.netdev, "pci": r.pci, "gpu": r.gpu,
                "numa": r.numa, "gpu_link": r.gpu_link, "ip": str(ip),
                "prefix": rail_alloc[pool.fabric][r.rail].net.prefixlen,
                "mtu": c.tuning.roce.mtu if fabrics_spec[pool.fabric].type == "roce" else 4092,
                "link_layer": sku.compute_nics.link_layer, "speed_gbps": sku.compute_nics.speed_gbps,
                "leaf": leaf, "leaf_port": port,
                "mac": (entry.macs.get(r.netdev) if entry else None) or mac(1 + r.rail, s.ordinal),
            })
        node: dict[str, Any] = {
            "name": s.name, "pool": s.pool, "sku": pool.sku, "rack": rack_name(c, s.rack),
            "su": su_of[pool.fabric][s.name], "fabric": pool.fabric,
            "fabric_type": fabrics_spec[pool.fabric].type, "ordinal": s.ordinal,
            "mgmt_ip": str(mgmt[s.name]), "mgmt_prefix": c.addressing.management.prefixlen,
            "mgmt_netdev": sku.management_nic.netdev,
            "mgmt_mac": (entry.macs.get("mgmt") if entry else None) or mac(0, s.ordinal),
            "storage_ips": [str(storage.take())] if storage else [],
            "bmc": entry.bmc.model_dump(mode="json") if entry and entry.bmc else None,
            "rails": rails,
        }
        node["expectation_digest"] = sha256_of({
            "sku_digest": sku_digest[pool.sku], "name": s.name, "mgmt_ip": node["mgmt_ip"],
            "mgmt_netdev": node["mgmt_netdev"], "fabric_type": node["fabric_type"],
            "rails": [{k: r[k] for k in ("index", "hca", "netdev", "ip", "prefix", "mtu", "link_layer",
                                         "speed_gbps", "gpu", "numa")} for r in rails]})
        nodes.append(node)

    racks: dict[str, dict[str, Any]] = {}
    for n in nodes:
        r = racks.setdefault(n["rack"], {"name": n["rack"], "nodes": [], "power_kw": 0.0})
        r["nodes"].append(n["name"])
        r["power_kw"] = round(r["power_kw"] + spec.skus[n["sku"]].node_power_kw, 3)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "cluster": c.metadata.name,
        "description": c.metadata.description,
        "target": c.target,
        "pool_manager": c.pool_manager,
        "skus": skus,
        "software": software,
        "tuning": tuning,
        "rollout": c.rollout.model_dump(mode="json"),
        "certification": c.certification.model_dump(mode="json"),
        "site": {"name": c.site.name, "power_kw_per_rack": c.site.racks.power_kw},
        "racks": list(racks.values()),
        "networks": {
            "management": {**c.fabrics.management.model_dump(mode="json"), "cidr": str(c.addressing.management)},
            "storage": ({**c.fabrics.storage.model_dump(mode="json"), "cidr": str(c.addressing.storage)}
                        if c.fabrics.storage and c.addressing.storage else None),
            "compute": {f: [str(n) for n in nets] for f, nets in sorted(c.addressing.compute.items())},
        },
        "pools": [{"name": p.name, "sku": p.sku, "fabric": p.fabric, "count": p.count,
                   "nodes": [s.name for s in slots if s.pool == p.name]} for p in c.pools],
        "nodes": nodes,
        "fabrics": [fabric_doc(f, fabrics_spec[name].oversubscription) for name, f in fabrics.items()],
    }
    doc["plan_hash"] = sha256_of(doc)
    return Plan(doc=doc, fabrics=fabrics, spec=spec)


def fabric_doc(f: Fabric, requested: str) -> dict[str, Any]:
    return {
        "name": f.name, "type": f.kind, "switch_model": f.switch_model, "radix": f.radix,
        "port_speed_gbps": f.port_speed_gbps, "tiers": f.tiers, "scalable_units": f.scalable_units,
        "su_size": f.su_size, "rails": f.rails, "nodes": f.nodes, "endpoints": f.endpoints,
        "switches_count": {"leaf": f.leaves, "spine": f.spines, "core": f.cores},
        "oversubscription_requested": requested,
        "oversubscription": f"{f.oversubscription[0]}:{f.oversubscription[1]}",
        "bisection_gbps": f.bisection_gbps, "max_switch_hops": f.max_switch_hops,
        "max_switch_hops_any_rail": f.max_switch_hops_any_rail,
        "switches": [list(s) for s in f.switches],
        "switch_fields": ["name", "role", "su", "rail", "pod", "group", "position", "radix", "ports_used"],
        "links": [list(x) for x in f.links],
        "link_fields": ["kind", "a_dev", "a_port", "b_dev", "b_port", "speed_gbps"],
        "failure_domains": {
            "scalable_units": {str(i + 1): list(leaves) for i, leaves in enumerate(f.failure_domains.su_leaves)},
        },
    }
