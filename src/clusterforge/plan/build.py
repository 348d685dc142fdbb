"""Compile a validated spec into the plan: nodes, addresses, fabrics, racks, expectations.

Pure and deterministic: the same spec gives a byte-identical plan.json (no clock, no paths, no env, no set
iteration). `plan_hash` is the SHA-256 of the canonical JSON (`digest.canonical_json`) of the plan without
`plan_hash`; plan.json is that same canonical JSON with `plan_hash` added, so the hash can be re-checked
from the file alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from clusterforge.errors import InputError
from clusterforge.plan.addressing import Allocator, mac_parts, management_ips
from clusterforge.plan.desired import netdev_mtu, node_desired
from clusterforge.plan.desired_counters import counters_input
from clusterforge.plan.desired_fabric import node_cable_ids
from clusterforge.plan.desired_monitoring import monitoring_input
from clusterforge.plan.desired_network import management_input
from clusterforge.plan.desired_storage import storage_input
from clusterforge.plan.digest import canonical_json, sha256_of
from clusterforge.plan.fabric import Fabric, FabricInput, plan_fabric
from clusterforge.spec.layout import node_slots, rack_name
from clusterforge.spec.load import Spec
from clusterforge.spec.netcatalog import PortNaming

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Plan:
    """The compiled plan: `doc` is what plan.json holds (treat it as read-only: its canonical JSON is cached
    per top-level key); `fabrics` keeps the rich fabric objects."""

    doc: dict[str, Any]
    fabrics: dict[str, Fabric]
    spec: Spec
    json_parts: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

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

    def canonical_json_chunks(self) -> list[str]:
        """Canonical JSON of the whole doc (sorted keys, no whitespace), as pieces to write or join."""
        parts = self.json_parts
        for k, v in self.doc.items():
            if k not in parts:
                parts[k] = canonical_json(v)
        return _chunks(parts, sorted(self.doc))

    def canonical_json(self) -> str:
        return "".join(self.canonical_json_chunks())


def _chunks(parts: dict[str, str], keys: list[str]) -> list[str]:
    out = ["{"]
    for i, k in enumerate(keys):
        out += [("," if i else "") + json.dumps(k, ensure_ascii=False) + ":", parts[k]]
    out.append("}")
    return out


def _skus(spec: Spec) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    overrides = spec.cluster.certification.thresholds
    for name, sku in sorted(spec.skus.items()):
        d = sku.model_dump(mode="json")
        if d.get("nvlink_domain") is None:  # absent, not null: SKUs without one keep their plan and digests
            d.pop("nvlink_domain", None)
        if not d.get("unverified"):  # likewise: only a SKU with unverified parts carries the list
            d.pop("unverified", None)
        for key, value in sorted(overrides.get(name, {}).items()):
            d["thresholds"][key] = {
                **d["thresholds"][key],
                "value": value,
                "source": "spec override (certification.thresholds)",
                "marker": "override",
            }
        out[name] = d
    return out


def _storage_net(spec: Spec) -> dict[str, Any] | None:
    """fabrics.storage as plan data; ``lossless`` only when on, so specs without it plan as before."""
    net = spec.cluster.fabrics.storage
    if net is None:
        return None
    return net.model_dump(mode="json", exclude=None if net.lossless else {"lossless"})


def _tuning(spec: Spec) -> dict[str, Any]:
    t = spec.cluster.tuning.model_dump(mode="json")
    t["roce"]["tos"] = spec.cluster.tuning.roce.tos
    return t


def _plan_fabrics(spec: Spec, fabric_nodes: dict[str, list[str]]) -> dict[str, Fabric]:
    """Run the fat-tree engine per compute fabric; what it cannot wire is bad input, reported like a check."""
    c = spec.cluster
    out: dict[str, Fabric] = {}
    problems = []
    for fi, fs in enumerate(c.fabrics.compute):
        names = fabric_nodes[fs.name]
        if not names:
            continue
        sku = spec.skus[next(p.sku for p in c.pools if p.fabric == fs.name)]
        try:
            fab = plan_fabric(
                FabricInput(
                    name=fs.name,
                    kind=fs.type,
                    nodes=tuple(names),
                    rails=sku.compute_nics.count,
                    su_size=fs.su_size,
                    radix=fs.switch.radix,
                    port_speed_gbps=fs.switch.port_speed_gbps,
                    oversubscription=fs.ratio,
                    switch_model=fs.switch.model,
                )
            )
        except ValueError as exc:
            problems.append(
                spec.problem(
                    ("fabrics", "compute", fi),
                    "a fabric the rail-optimized fat-tree planner can wire (docs/fabric.md)",
                    str(exc),
                    "follow the suggestion above",
                )
            )
            continue
        if fs.max_tiers is not None and fab.tiers > fs.max_tiers:
            problems.append(
                spec.problem(
                    ("fabrics", "compute", fi, "max_tiers"),
                    f"at most {fs.max_tiers} tier(s) for fabric '{fs.name}'",
                    f"{fab.tiers} tiers needed ({fab.leaves} leaves, {fab.endpoints} endpoints "
                    f"at radix {fab.radix})",
                    "raise max_tiers, use a higher-radix switch or split the fabric",
                )
            )
        out[fs.name] = fab
    if problems:
        raise InputError(problems, f"invalid cluster spec {spec.file}")
    return out


DIGEST_VERSION = "clusterforge-expectation/2"
_DIGEST_RAIL = itemgetter(
    "index", "hca", "netdev", "ip", "prefix", "mtu", "link_layer", "speed_gbps", "gpu", "numa"
)
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def expectation_digest(
    sku_digest: str, node: dict[str, Any], bios_digest: str | None = None, desired_digest: str = ""
) -> str:
    """SHA-256 over what `node` is certified against and nothing else: the digest of its SKU (with threshold
    overrides), tuning and software pins, the digest of its compiled desired state (`desired_digest`), plus
    its own name, management address and netdev, fabric type and, per rail, (index, hca, netdev, ip, prefix,
    mtu, link_layer, speed_gbps, gpu, numa) - as a JSON list in that fixed order, headed by DIGEST_VERSION.
    A node with a BMC is also checked against its vendor's BIOS attribute map, so `bios_digest` (that map's
    digest) is appended for it."""
    parts: list[Any] = [
        DIGEST_VERSION,
        sku_digest,
        desired_digest,
        node["name"],
        node["mgmt_ip"],
        node["mgmt_netdev"],
        node["fabric_type"],
        list(map(_DIGEST_RAIL, node["rails"])),
    ]
    if bios_digest is not None:
        parts.append(bios_digest)
    return hashlib.sha256(_encode(parts).encode("utf-8")).hexdigest()


def build_plan(spec: Spec) -> Plan:
    bios_digests: dict[str, str] = {}

    def bios_digest(vendor: str) -> str:
        if vendor not in bios_digests:
            from clusterforge.spec import bios

            bios_digests[vendor] = sha256_of(bios.inventory_map(vendor, _tuning(spec)))
        return bios_digests[vendor]

    """Compile `spec`; raises InputError (exit 2) for a fabric the engine cannot build."""
    c = spec.cluster
    slots = node_slots(c)
    pools = {p.name: p for p in c.pools}
    fabrics_spec = {f.name: f for f in c.fabrics.compute}
    skus = _skus(spec)
    tuning = _tuning(spec)
    software = c.software.model_dump(mode="json")
    certification = c.certification.model_dump(mode="json")
    monitoring_in = monitoring_input(software, certification)
    counters_in = counters_input(certification)
    management_in = management_input(
        c.fabrics.management.model_dump(mode="json"),
        str(c.addressing.gateway) if c.addressing.gateway is not None else None,
    )
    names = [s.name for s in slots]
    mgmt = management_ips(c, names)
    storage = Allocator(c.addressing.storage, c.addressing.reserved) if c.addressing.storage else None
    entries = {n.name: n for p in c.pools for n in p.nodes}
    storage_in = storage_input(
        c.storage.model_dump(mode="json") if c.storage else None,
        _storage_net(spec),
        str(c.addressing.storage) if c.addressing.storage else None,
    )

    fabric_nodes: dict[str, list[str]] = {f: [] for f in fabrics_spec}
    for s in slots:
        fabric_nodes[pools[s.pool].fabric].append(s.name)
    fabrics = _plan_fabrics(spec, fabric_nodes)
    # per fabric: its leaves' port naming and every node-leaf cable's ID, as the cabling sheet numbers them
    cabling = {
        f: (PortNaming(fab.switch_model, fab.port_speed_gbps), node_cable_ids(f, fab.links))
        for f, fab in fabrics.items()
    }
    rail_alloc = {
        f: [Allocator(net, c.addressing.reserved) for net in c.addressing.compute.get(f, [])] for f in fabrics
    }
    su_of = {
        n: i // fabrics_spec[f].su_size + 1
        for f, fnames in fabric_nodes.items()
        for i, n in enumerate(fnames)
    }
    racks_named = {r: rack_name(c, r) for r in sorted({s.rack for s in slots})}
    mgmt_prefix = c.addressing.management.prefixlen

    sku_digest = {
        name: sha256_of({"sku": d, "tuning": tuning, "software": software}) for name, d in skus.items()
    }
    desired: dict[str, tuple[dict[str, Any], str]] = {}  # per SKU: (desired state, its digest)
    nodes: list[dict[str, Any]] = []
    pool_nodes: dict[str, list[str]] = {p: [] for p in pools}
    for s in slots:
        pool = pools[s.pool]
        sku = spec.skus[pool.sku]
        fname = pool.fabric
        ftype = fabrics_spec[fname].type
        node_ports = fabrics[fname].node_ports
        naming, cables = cabling[fname]
        allocs = rail_alloc[fname]
        entry = entries.get(s.name)
        macs = entry.macs if entry else {}
        nics = sku.compute_nics
        mtu = netdev_mtu(nics.link_layer, tuning)  # the compiled desired state's, carried for addressing
        mac_hi, mac_lo = mac_parts(s.ordinal)
        rails = []
        for r in nics.rails:
            leaf, port = node_ports[(s.name, r.rail)]
            alloc = allocs[r.rail]
            rails.append(
                {
                    "index": r.rail,
                    "hca": r.hca,
                    "port": 1,
                    "netdev": r.netdev,
                    "pci": r.pci,
                    "gpu": r.gpu,
                    "numa": r.numa,
                    "gpu_link": r.gpu_link,
                    "ip": alloc.take_str(),
                    "prefix": alloc.net.prefixlen,
                    "mtu": mtu,
                    "link_layer": nics.link_layer,
                    "speed_gbps": nics.speed_gbps,
                    "leaf": leaf,
                    "leaf_port": port,
                    "leaf_port_name": naming.ref(port).name,
                    "cable_id": cables.get((s.name, r.rail), ""),
                    "mac": macs.get(r.netdev) or f"{mac_hi}{1 + r.rail:02x}{mac_lo}",
                }
            )
        node: dict[str, Any] = {
            "name": s.name,
            "pool": s.pool,
            "sku": pool.sku,
            "rack": racks_named[s.rack],
            "su": su_of[s.name],
            "fabric": fname,
            "fabric_type": ftype,
            "ordinal": s.ordinal,
            "mgmt_ip": mgmt[s.ordinal],
            "mgmt_prefix": mgmt_prefix,
            "mgmt_netdev": sku.management_nic.netdev,
            "mgmt_mac": macs.get("mgmt") or f"{mac_hi}00{mac_lo}",
            "storage_ips": [storage.take_str()] if storage else [],
            "bmc": entry.bmc.model_dump(mode="json") if entry and entry.bmc else None,
            "rails": rails,
        }
        if pool.sku not in desired:  # a function of the SKU (its rails, CPU) and the tuning: compiled once
            d = node_desired(
                skus[pool.sku],
                tuning,
                rails,
                software,
                storage_in,
                monitoring=monitoring_in,
                link_counters=counters_in,
                management=management_in,
            )
            desired[pool.sku] = (d, sha256_of(d))
        node["desired"], desired_digest = desired[pool.sku]
        bmc = node["bmc"]
        node["expectation_digest"] = expectation_digest(
            sku_digest[pool.sku], node, bios_digest(bmc["vendor"]) if bmc else None, desired_digest
        )
        nodes.append(node)
        pool_nodes[s.pool].append(s.name)

    racks: dict[str, dict[str, Any]] = {}
    power = {p.name: spec.skus[p.sku].node_power_kw for p in c.pools}
    for n in nodes:
        rack = racks.setdefault(n["rack"], {"name": n["rack"], "nodes": [], "power_kw": 0.0})
        rack["nodes"].append(n["name"])
        rack["power_kw"] = round(rack["power_kw"] + power[n["pool"]], 3)
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
            "management": {
                **c.fabrics.management.model_dump(mode="json"),
                "cidr": str(c.addressing.management),
            },
            "storage": (
                {**(_storage_net(spec) or {}), "cidr": str(c.addressing.storage)}
                if c.fabrics.storage and c.addressing.storage
                else None
            ),
            "compute": {f: [str(n) for n in nets] for f, nets in sorted(c.addressing.compute.items())},
        },
        "pools": [
            {"name": p.name, "sku": p.sku, "fabric": p.fabric, "count": p.count, "nodes": pool_nodes[p.name]}
            for p in c.pools
        ],
        "nodes": nodes,
        "fabrics": [fabric_doc(f, fabrics_spec[name].oversubscription) for name, f in fabrics.items()],
    }
    parts = {k: canonical_json(v) for k, v in doc.items()}
    h = hashlib.sha256()
    for chunk in _chunks(parts, sorted(parts)):
        h.update(chunk.encode("utf-8"))
    doc["plan_hash"] = h.hexdigest()
    return Plan(doc=doc, fabrics=fabrics, spec=spec, json_parts=parts)


def fabric_doc(f: Fabric, requested: str) -> dict[str, Any]:
    return {
        "name": f.name,
        "type": f.kind,
        "switch_model": f.switch_model,
        "radix": f.radix,
        "port_speed_gbps": f.port_speed_gbps,
        "tiers": f.tiers,
        "scalable_units": f.scalable_units,
        "su_size": f.su_size,
        "rails": f.rails,
        "nodes": f.nodes,
        "endpoints": f.endpoints,
        "switches_count": {"leaf": f.leaves, "spine": f.spines, "core": f.cores},
        "oversubscription_requested": requested,
        "oversubscription": f"{f.oversubscription[0]}:{f.oversubscription[1]}",
        "bisection_gbps": f.bisection_gbps,
        "max_switch_hops": f.max_switch_hops,
        "max_switch_hops_any_rail": f.max_switch_hops_any_rail,
        "switches": list(map(list, f.switches)),
        "switch_fields": ["name", "role", "su", "rail", "pod", "group", "position", "radix", "ports_used"],
        "links": list(map(list, f.links)),
        "link_fields": ["kind", "a_dev", "a_port", "b_dev", "b_port", "speed_gbps"],
        "failure_domains": {
            "scalable_units": {
                str(i + 1): list(leaves) for i, leaves in enumerate(f.failure_domains.su_leaves)
            },
        },
    }
