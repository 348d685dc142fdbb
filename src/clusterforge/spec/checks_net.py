"""Network cross-field rules: fabric size against the switch radix, per-rail CIDRs, subnet sizes, overlaps."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable

from clusterforge.spec.layout import NodeSlot
from clusterforge.spec.model import Cluster, ComputeFabric
from clusterforge.spec.sku import Sku
from clusterforge.spec.yamlsrc import PathKey, format_path

Bad = Callable[[PathKey, str, str, str], None]


def fabric_checks(c: Cluster, skus: dict[str, Sku], bad: Bad) -> None:
    """Rails per fabric, per-rail CIDRs, and whether each fabric can be built at its radix."""
    for fi, fab in enumerate(c.fabrics.compute):
        pools = [p for p in c.pools if p.fabric == fab.name and p.sku in skus]
        rails = sorted({skus[p.sku].compute_nics.count for p in pools})
        if len(rails) > 1:
            bad(
                ("fabrics", "compute", fi, "name"),
                "pools with one rail count per fabric",
                f"rail counts {rails}",
                "split the pools over separate fabrics",
            )
        n_nodes = sum(p.count for p in pools)
        cidrs = c.addressing.compute.get(fab.name)
        if cidrs is None:
            if pools:
                bad(
                    ("addressing", "compute"),
                    f"a list of per-rail CIDRs for fabric '{fab.name}'",
                    "none",
                    f"add addressing.compute.{fab.name}: [one CIDR per rail]",
                )
        else:
            if rails and len(cidrs) != rails[0]:
                sku_names = sorted({p.sku for p in pools})
                bad(
                    ("addressing", "compute", fab.name),
                    f"{rails[0]} CIDRs, one per rail (SKU {', '.join(sku_names)} "
                    f"has {rails[0]} compute NICs)",
                    f"{len(cidrs)} CIDRs",
                    "list exactly one CIDR per rail",
                )
            for ri, net in enumerate(cidrs):
                _size_check(bad, ("addressing", "compute", fab.name, ri), net, n_nodes, c.addressing.reserved)
        if rails and n_nodes:
            _fabric_fit(bad, fi, fab, n_nodes, rails[0])


def min_radix(endpoints: int, ports_per_leaf: int) -> int:
    """Smallest even radix whose three-tier fat tree (radix³/4) holds `endpoints` and fits one leaf."""
    r = max(4, ports_per_leaf + ports_per_leaf % 2)
    while r**3 // 4 < endpoints:
        r += 2
    return r


def _fabric_fit(bad: Bad, fi: int, fab: ComputeFabric, nodes: int, rails: int) -> None:
    """The fabric can be built at its radix, oversubscription and tier limit (the engine's port arithmetic,
    docs/fabric.md); the plan builder reports anything finer the engine finds."""
    d, u = fab.ratio
    su, radix = fab.su_size, fab.switch.radix
    n_su = math.ceil(nodes / su)
    endpoints = n_su * su * rails
    where = f"fabric '{fab.name}'"
    if n_su == 1 and rails == 1:
        if su > radix:
            bad(
                ("fabrics", "compute", fi, "su_size"),
                f"su_size <= radix {radix}",
                f"su_size {su}",
                f"use su_size <= {radix}",
            )
        return
    up = math.ceil(su * u / d)
    if su + up > radix:
        bad(
            ("fabrics", "compute", fi, "su_size"),
            f"a leaf with su_size downlinks + ceil(su_size x {u}/{d}) = {up} uplinks <= radix {radix} "
            f"({where}, "
            f"{fab.oversubscription})",
            f"su_size {su} -> {su + up} ports",
            f"use su_size <= {radix * d // (d + u)}, more oversubscription, "
            f"or a switch of radix >= {su + up}",
        )
        return
    two_max, three_max = radix**2 // 2, radix**3 // 4
    if endpoints > three_max:
        bad(
            ("fabrics", "compute", fi, "switch", "radix"),
            f"at most radix³/4 = {three_max} endpoints for three tiers of radix {radix} ({where})",
            f"{endpoints} endpoints ({n_su} SUs x {su} nodes x {rails} rails)",
            f"use switches of radix >= {min_radix(endpoints, su + up)} "
            "(e.g. a 144-port XDR-class switch run as "
            "400G logical ports) or split the cluster into several fabrics",
        )
        return
    if fab.max_tiers == 1:
        bad(
            ("fabrics", "compute", fi, "max_tiers"),
            "one leaf only for a single tier (one SU, one rail)",
            f"{n_su} SUs x {rails} rails = {n_su * rails} leaves",
            "raise max_tiers to 2 or 3",
        )
    elif fab.max_tiers == 2 and (endpoints > two_max or n_su * rails > radix):
        r2 = max(su + up, math.ceil(math.sqrt(2 * endpoints)), n_su * rails)
        bad(
            ("fabrics", "compute", fi, "max_tiers"),
            f"at most radix²/2 = {two_max} endpoints and {radix} leaves for two tiers "
            f"of radix {radix} ({where})",
            f"{endpoints} endpoints, {n_su * rails} leaves",
            f"allow max_tiers: 3 or use switches of radix >= {r2 + r2 % 2}",
        )


def ip_str(value: int) -> str:
    return str(ipaddress.IPv4Address(value))


def _size_check(bad: Bad, path: PathKey, net: ipaddress.IPv4Network, hosts: int, reserved: int) -> None:
    usable = net.num_addresses - 2 - reserved
    if hosts > usable:
        need = 32 - math.ceil(math.log2(hosts + reserved + 2))
        bad(
            path,
            f"room for {hosts} hosts after {reserved} reserved addresses",
            f"{net} ({max(usable, 0)} usable)",
            f"use a /{need} or larger",
        )


def addressing_checks(c: Cluster, slots: list[NodeSlot], bad: Bad) -> None:
    """Subnet sizes and overlaps, the gateway, explicit management addresses."""
    a = c.addressing
    fabrics = [f.name for f in c.fabrics.compute]
    for name in a.compute:
        if name not in fabrics:
            bad(
                ("addressing", "compute", name),
                f"a compute fabric name ({', '.join(fabrics)})",
                f"'{name}'",
                "remove it or correct the fabric name",
            )
    _size_check(bad, ("addressing", "management"), a.management, len(slots), a.reserved)
    if a.storage is not None:
        _size_check(bad, ("addressing", "storage"), a.storage, len(slots), a.reserved)
    if c.fabrics.storage is not None and a.storage is None:
        bad(
            ("addressing",),
            "addressing.storage (fabrics.storage is declared)",
            "none",
            "add addressing.storage",
        )
    if a.gateway is not None and a.gateway not in a.management:
        bad(
            ("addressing", "gateway"),
            f"an address in addressing.management ({a.management})",
            str(a.gateway),
            "use the management network's router address",
        )
    nets: list[tuple[PathKey, ipaddress.IPv4Network]] = [(("addressing", "management"), a.management)]
    if a.storage is not None:
        nets.append((("addressing", "storage"), a.storage))
    for fname, lst in a.compute.items():
        nets += [(("addressing", "compute", fname, i), n) for i, n in enumerate(lst)]
    for i in range(len(nets)):
        for j in range(i + 1, len(nets)):
            if nets[i][1].overlaps(nets[j][1]):
                bad(
                    nets[j][0],
                    f"a subnet that does not overlap {format_path(nets[i][0])} ({nets[i][1]})",
                    str(nets[j][1]),
                    "choose disjoint CIDRs",
                )
    first: dict[str, PathKey] = {}
    explicit = {n.name for p in c.pools for n in p.nodes if n.management_ip is not None}
    auto0 = int(a.management.network_address) + 1 + a.reserved  # plan.addressing.management_ips
    for pi, p in enumerate(c.pools):
        for j, n in enumerate(p.nodes):
            if n.management_ip is None:
                continue
            path: PathKey = ("pools", pi, "nodes", j, "management_ip")
            ip = str(n.management_ip)
            if ip in first:
                bad(
                    path,
                    "a management IP used by one node only",
                    f"{ip} (also at {format_path(first[ip])})",
                    "give every node its own address",
                )
            first.setdefault(ip, path)
            o = int(n.management_ip) - auto0
            if 0 <= o < len(slots) and slots[o].name != n.name and slots[o].name not in explicit:
                bad(
                    path,
                    f"an address not given automatically to another node (node k of the cluster gets "
                    f"{ip_str(auto0)} + k)",
                    f"{ip}, the automatic address of '{slots[o].name}'",
                    f"use an address outside {ip_str(auto0)}..{ip_str(auto0 + len(slots) - 1)} or give "
                    f"'{slots[o].name}' an explicit address too",
                )
