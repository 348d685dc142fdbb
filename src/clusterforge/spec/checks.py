"""Cross-field rules of a cluster spec; each returns Problems naming file, YAML path, fix."""

from __future__ import annotations

import ipaddress
import math
from collections import Counter

from clusterforge.errors import Problem
from clusterforge.spec.layout import node_slots, rack_name
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku, Thresholds
from clusterforge.spec.yamlsrc import PathKey, SourceDoc, format_path


def cross_checks(c: Cluster, skus: dict[str, Sku], doc: SourceDoc) -> list[Problem]:
    out: list[Problem] = []

    def bad(path: PathKey, expected: str, found: str, fix: str) -> None:
        out.append(Problem(doc.file, format_path(path), expected, found, fix, doc.line_of(path)))

    fabrics = {f.name: f for f in c.fabrics.compute}
    # unique names
    for what, names, key in (("pool", [p.name for p in c.pools], "pools"),
                             ("compute fabric", [f.name for f in c.fabrics.compute], "fabrics.compute")):
        for name, n in Counter(names).items():
            if n > 1:
                idx = names.index(name, names.index(name) + 1)
                root: PathKey = tuple(key.split(".")) + (idx, "name")
                bad(root, f"unique {what} names", f"'{name}' {n} times", f"rename one of the {what}s")
    slots = node_slots(c)
    seen: dict[str, int] = {}
    for s in slots:
        if s.name in seen:
            pi = [p.name for p in c.pools].index(s.pool)
            bad(("pools", pi, "naming"), "node names unique across the cluster",
                f"'{s.name}' generated twice", "give each pool a distinct naming pattern")
            break
        seen[s.name] = s.ordinal
    # pools: sku, fabric, node entries
    for i, p in enumerate(c.pools):
        if p.sku not in skus:
            bad(("pools", i, "sku"), f"one of the spec's skus ({', '.join(skus)})", f"'{p.sku}'",
                "list the SKU under `skus:` or correct the name")
            continue
        sku = skus[p.sku]
        if p.fabric not in fabrics:
            bad(("pools", i, "fabric"), f"a compute fabric name ({', '.join(fabrics)})", f"'{p.fabric}'",
                "declare it under fabrics.compute or correct the name")
            continue
        fab = fabrics[p.fabric]
        want = "InfiniBand" if fab.type == "infiniband" else "Ethernet"
        if sku.compute_nics.link_layer != want:
            bad(("pools", i, "fabric"), f"a SKU whose compute NICs run {want} on {fab.type} fabric '{fab.name}'",
                f"{sku.name} with {sku.compute_nics.link_layer} NICs", "attach the pool to a matching fabric")
        if sku.compute_nics.speed_gbps != fab.switch.port_speed_gbps:
            bad(("fabrics", "compute", list(fabrics).index(fab.name), "switch", "port_speed_gbps"),
                f"switch ports at the NIC speed of pool '{p.name}' ({sku.compute_nics.speed_gbps} Gb/s)",
                f"{fab.switch.port_speed_gbps} Gb/s", "use the NIC speed (split faster switch ports into "
                "logical ports of the NIC speed and count them in radix)")
        names = {p.naming.format(index=k) for k in range(1, p.count + 1)}
        for j, n in enumerate(p.nodes):
            if n.name not in names:
                bad(("pools", i, "nodes", j, "name"), f"a node of pool '{p.name}' ({p.naming.format(index=1)} …)",
                    f"'{n.name}'", "use a name the pool's naming pattern generates, or raise its count")
            if n.management_ip is not None and n.management_ip not in c.addressing.management:
                bad(("pools", i, "nodes", j, "management_ip"), f"an address in {c.addressing.management}",
                    str(n.management_ip), "pick an address inside addressing.management")
    # rails per fabric: every pool on a fabric has the same rail count, and addressing gives one CIDR per rail
    for fi, fab in enumerate(c.fabrics.compute):
        pools = [p for p in c.pools if p.fabric == fab.name and p.sku in skus]
        rails = {skus[p.sku].compute_nics.count for p in pools}
        if len(rails) > 1:
            bad(("fabrics", "compute", fi, "name"), "pools with one rail count per fabric",
                f"rail counts {sorted(rails)}", "split the pools over separate fabrics")
        cidrs = c.addressing.compute.get(fab.name)
        if cidrs is None:
            if pools:
                bad(("addressing", "compute"), f"a list of per-rail CIDRs for fabric '{fab.name}'", "none",
                    f"add addressing.compute.{fab.name}: [one CIDR per rail]")
            continue
        n_nodes = sum(p.count for p in pools)
        if rails and len(cidrs) != next(iter(rails)):
            bad(("addressing", "compute", fab.name), f"{next(iter(rails))} CIDRs (one per rail of the SKU)",
                f"{len(cidrs)}", "list exactly one CIDR per rail")
        for ri, net in enumerate(cidrs):
            _size_check(bad, ("addressing", "compute", fab.name, ri), net, n_nodes, c.addressing.reserved)
        _fabric_fit(bad, fi, fab.su_size, fab.switch.radix, fab.ratio, n_nodes, next(iter(rails), 0))
    for name in c.addressing.compute:
        if name not in fabrics:
            bad(("addressing", "compute", name), f"a compute fabric name ({', '.join(fabrics)})", f"'{name}'",
                "remove it or correct the fabric name")
    _size_check(bad, ("addressing", "management"), c.addressing.management, len(slots), c.addressing.reserved)
    if c.addressing.storage is not None:
        _size_check(bad, ("addressing", "storage"), c.addressing.storage, len(slots), c.addressing.reserved)
    # overlaps
    nets: list[tuple[PathKey, ipaddress.IPv4Network]] = [(("addressing", "management"), c.addressing.management)]
    if c.addressing.storage is not None:
        nets.append((("addressing", "storage"), c.addressing.storage))
    for fname, lst in c.addressing.compute.items():
        nets += [(("addressing", "compute", fname, i), n) for i, n in enumerate(lst)]
    for a in range(len(nets)):
        for b in range(a + 1, len(nets)):
            if nets[a][1].overlaps(nets[b][1]):
                bad(nets[b][0], f"a subnet that does not overlap {format_path(nets[a][0])} ({nets[a][1]})",
                    str(nets[b][1]), "choose disjoint CIDRs")
    # management IP uniqueness
    ips = Counter(str(n.management_ip) for p in c.pools for n in p.nodes if n.management_ip)
    for ip, k in ips.items():
        if k > 1:
            bad(("pools",), "unique management IPs", f"{ip} used {k} times", "give every node its own address")
    # racks: capacity and power budget
    racks = c.site.racks
    if len(slots) > racks.count * racks.nodes_per_rack:
        bad(("site", "racks", "count"), f"room for {len(slots)} nodes at {racks.nodes_per_rack} per rack "
            f"(>= {math.ceil(len(slots) / racks.nodes_per_rack)} racks)", str(racks.count), "add racks")
    power: dict[int, float] = {}
    pool_sku = {p.name: p.sku for p in c.pools}
    for s in slots:
        sku = skus.get(pool_sku[s.pool])
        if sku:
            power[s.rack] = power.get(s.rack, 0.0) + sku.node_power_kw
    for rack, kw in sorted(power.items()):
        if kw > racks.power_kw + 1e-9:
            bad(("site", "racks", "power_kw"), f"rack {rack_name(c, rack)} within its {racks.power_kw} kW budget",
                f"{kw:.1f} kW of nodes", "lower nodes_per_rack or raise the budget if the rack allows it")
            break
    # driver version within its branch
    drv = c.software.nvidia_driver
    if not drv.version.startswith(drv.branch + "."):
        bad(("software", "nvidia_driver", "version"), f"a version of branch {drv.branch} ({drv.branch}.x)",
            drv.version, "make branch and version agree")
    # certification threshold overrides
    known = set(Thresholds.model_fields) - {"ib_error_counters_max", "ib_error_counters_source"}
    for skuname, over in c.certification.thresholds.items():
        if skuname not in skus:
            bad(("certification", "thresholds", skuname), f"a SKU of this spec ({', '.join(skus)})",
                f"'{skuname}'", "use a SKU name listed under skus")
            continue
        for key in over:
            if key not in known:
                bad(("certification", "thresholds", skuname, key), f"a threshold name ({', '.join(sorted(known))})",
                    f"'{key}'", "correct the threshold name")
    if c.tuning.roce.cnp_priority == c.tuning.roce.lossless_priority:
        bad(("tuning", "roce", "cnp_priority"), "a CNP priority distinct from the lossless priority",
            str(c.tuning.roce.cnp_priority), "use 6 for CNP (strict) and 3 for RoCE data")
    return out


def _size_check(bad, path: PathKey, net: ipaddress.IPv4Network, hosts: int, reserved: int) -> None:  # type: ignore[no-untyped-def]
    usable = net.num_addresses - 2 - reserved
    if hosts > usable:
        need = 32 - math.ceil(math.log2(hosts + reserved + 2))
        bad(path, f"room for {hosts} hosts after {reserved} reserved addresses", f"{net} ({max(usable, 0)} usable)",
            f"use a /{need} or larger")


def _fabric_fit(bad, fi: int, su: int, radix: int, ratio: tuple[int, int], nodes: int, rails: int) -> None:  # type: ignore[no-untyped-def]
    d, u = ratio
    up = math.ceil(su * u / d)
    if su + up > radix:
        bad(("fabrics", "compute", fi, "su_size"), f"a leaf with su_size downlinks + {up} uplinks <= radix {radix}",
            f"su_size {su}", f"use su_size <= {radix * d // (d + u)} or a higher oversubscription")
        return
    if rails == 0 or nodes == 0:
        return
    endpoints = math.ceil(nodes / su) * su * rails
    limit = radix**3 // 4
    if endpoints > limit:
        bad(("fabrics", "compute", fi, "switch", "radix"),
            f"at most {limit} endpoints for three tiers of radix {radix} (radix³/4)",
            f"{endpoints} endpoints ({nodes} nodes x {rails} rails, full SUs)",
            "use a higher-radix switch (e.g. 144-port XDR) or split the fabric")
