"""Storage cross-field rules: what each shared filesystem type needs, the network that carries it, scratch
devices against the RAID level, unique mount points, and per-SKU floors that name a real target."""

from __future__ import annotations

import ipaddress

from clusterforge.spec.checks_net import Bad
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku
from clusterforge.spec.storage import SharedFs, Storage
from clusterforge.spec.yamlsrc import PathKey, format_path

#: per type: (needs servers, needs export, what export is)
_NEEDS: dict[str, tuple[bool, bool, str]] = {
    "nfs": (True, True, "the export path (e.g. /export/data)"),
    "lustre": (True, True, "the Lustre fsname (at most 8 characters, e.g. lustre1)"),
    "weka": (True, True, "the Weka filesystem name"),
    "gpfs": (False, True, "the GPFS filesystem (device) name, e.g. gpfs0"),
    "juicefs": (False, False, ""),
}
#: options clusterforge derives from fields; writing them by hand would contradict the fields
_DERIVED_OPTIONS = {"_netdev": "added to every shared mount", "proto": "transport", "nconnect": "nconnect"}
LUSTRE_FSNAME_MAX = 8


def storage_checks(c: Cluster, skus: dict[str, Sku], bad: Bad) -> None:
    _lossless(c, skus, bad)
    s = c.storage
    if s is None:
        return
    mounts: dict[str, PathKey] = {}
    names: dict[str, int] = {}
    for i, fs in enumerate(s.shared):
        at: PathKey = ("storage", "shared", i)
        if fs.name in names:
            bad(
                (*at, "name"),
                "a shared filesystem name used once",
                f"'{fs.name}' (also storage.shared[{names[fs.name]}])",
                "give every shared filesystem its own name",
            )
        names.setdefault(fs.name, i)
        _mountpoint(bad, mounts, fs.mountpoint, (*at, "mountpoint"))
        _shared(c, bad, at, fs)
    if s.scratch is not None:
        _scratch(bad, s)
        _mountpoint(bad, mounts, s.scratch.mountpoint, ("storage", "scratch", "mountpoint"))
    _floors_by_sku(bad, s, skus)


def _lossless(c: Cluster, skus: dict[str, Sku], bad: Bad) -> None:
    """``fabrics.storage.lossless``: the storage NICs take the compute rails' RoCE QoS, so they must exist
    and be configured (NICs per node, an address range, a shared filesystem on the storage network), and
    the QoS must be declared (tuning.roce) where no compute fabric is RoCE."""
    net = c.fabrics.storage
    if net is None or not net.lossless:
        return
    at: PathKey = ("fabrics", "storage", "lossless")
    if not net.nics_per_node:
        bad(
            ("fabrics", "storage", "nics_per_node"),
            "at least 1 storage NIC per node (lossless: true puts RoCE QoS on them)",
            "0",
            "set nics_per_node to the storage NICs each node uses, or remove lossless",
        )
    for p in c.pools:
        sku = skus.get(p.sku)
        if sku is not None and sku.storage_nics.count < 1:
            bad(
                at,
                f"storage NICs on every pool's SKU (lossless QoS goes on them); SKU {sku.name} of pool "
                f"{p.name} has storage_nics.count 0",
                "true",
                "use a SKU with storage NICs for that pool, or remove lossless",
            )
    if c.addressing.storage is None:
        bad(
            at,
            "a storage address range (addressing.storage): without it the storage NICs are not configured",
            "true, addressing.storage absent",
            "declare addressing.storage, or remove lossless",
        )
    shared = c.storage.shared if c.storage else []
    if not any(fs.network == "storage" for fs in shared):
        bad(
            at,
            "a shared filesystem on the storage network (storage.shared[].network: storage): the storage "
            "NICs are configured only for one",
            "true, no shared filesystem uses the storage network",
            "declare the shared filesystem the storage network carries, or remove lossless",
        )
    if not any(f.type == "roce" for f in c.fabrics.compute) and "roce" not in c.tuning.model_fields_set:
        bad(
            at,
            "the lossless QoS declared under tuning.roce (no compute fabric is RoCE, so none is in use "
            "to share)",
            "true, tuning.roce absent",
            "declare tuning.roce (lossless_priority, dscp, cnp_dscp, cnp_priority, ecn) as the storage "
            "switches are configured, or remove lossless",
        )


def _mountpoint(bad: Bad, seen: dict[str, PathKey], mp: str, at: PathKey) -> None:
    if mp in seen:
        bad(
            at,
            "a mount point used once",
            f"'{mp}' (also {format_path(seen[mp])})",
            "mount each at its own path",
        )
    seen.setdefault(mp, at)


def _shared(c: Cluster, bad: Bad, at: PathKey, fs: SharedFs) -> None:
    servers, export, export_is = _NEEDS[fs.type]
    if servers and not fs.servers:
        what = "the MGS node(s)" if fs.type == "lustre" else "the server(s)"
        bad((*at, "servers"), f"{what} of the {fs.type} filesystem", "none", f"list {what} under servers")
    if not servers and fs.servers:
        bad(
            (*at, "servers"),
            f"no servers for {fs.type} (the {'GPFS cluster' if fs.type == 'gpfs' else 'metadata URL'} "
            "says where it is)",
            ", ".join(fs.servers),
            "remove servers",
        )
    if fs.type == "lustre":
        for j, srv in enumerate(fs.servers):
            if not _is_ipv4(srv):
                bad(
                    (*at, "servers", j),
                    "an MGS IPv4 address (a Lustre NID is address@network)",
                    srv,
                    "write the MGS node's address on the network that carries the filesystem",
                )
    if fs.type == "nfs" and len(fs.servers) > 1:
        bad(
            (*at, "servers"),
            "one NFS server",
            f"{len(fs.servers)} servers",
            "declare one NFS mount per server",
        )
    if export and fs.export is None:
        bad((*at, "export"), export_is, "none", f"set export to {export_is}")
    if not export and fs.export is not None:
        bad(
            (*at, "export"),
            "no export for juicefs (the volume is named by its metadata)",
            fs.export,
            "remove it",
        )
    if fs.type == "nfs" and fs.export is not None and not fs.export.startswith("/"):
        bad((*at, "export"), "an absolute export path", fs.export, f"write /{fs.export}")
    if fs.type in ("lustre", "weka", "gpfs") and fs.export is not None:
        if "/" in fs.export:
            bad((*at, "export"), f"a {fs.type} filesystem name without '/'", fs.export, "write the name only")
        if fs.type == "lustre" and len(fs.export) > LUSTRE_FSNAME_MAX:
            bad(
                (*at, "export"),
                f"a Lustre fsname of at most {LUSTRE_FSNAME_MAX} characters",
                fs.export,
                "use the fsname the MGS knows (lctl dl on a client)",
            )
    if fs.type == "juicefs":
        for key, value, what in (
            ("metadata", fs.metadata, "the metadata engine URL"),
            ("client_url", fs.client_url, "the JuiceFS client binary's URL"),
            ("client_sha256", fs.client_sha256, "the SHA-256 of the client binary"),
        ):
            if value is None:
                bad((*at, key), f"{what} (juicefs)", "none", f"set {key}")
    else:
        for key, value in (
            ("metadata", fs.metadata),
            ("client_url", fs.client_url),
            ("client_sha256", fs.client_sha256),
        ):
            if value is not None:
                bad((*at, key), f"no {key} for {fs.type} (juicefs only)", value, f"remove {key}")
    if fs.transport == "rdma" and fs.type not in ("nfs", "lustre"):
        bad(
            (*at, "transport"),
            "rdma only for nfs (proto=rdma) or lustre (LNet o2ib)",
            f"rdma on {fs.type}",
            "use transport: tcp (Weka and GPFS configure RDMA in their own client)",
        )
    if fs.nconnect is not None and fs.type != "nfs":
        bad((*at, "nconnect"), "nconnect only on nfs", f"nconnect on {fs.type}", "remove nconnect")
    if fs.nconnect is not None and fs.transport == "rdma":
        bad((*at, "nconnect"), "nconnect with transport tcp", "transport rdma", "remove nconnect or use tcp")
    for j, opt in enumerate(fs.options):
        key = opt.split("=", 1)[0]
        if key in _DERIVED_OPTIONS:
            bad(
                (*at, "options", j),
                f"no '{key}' option (clusterforge sets it from {_DERIVED_OPTIONS[key]})",
                opt,
                "remove it" + ("" if key == "_netdev" else f"; set `{_DERIVED_OPTIONS[key]}` instead"),
            )
    if fs.network == "storage" and (c.fabrics.storage is None or c.addressing.storage is None):
        bad(
            (*at, "network"),
            "a storage network (fabrics.storage and addressing.storage) to carry it",
            "none declared",
            "declare fabrics.storage and addressing.storage, or set network: management",
        )
    elif fs.network == "storage" and c.fabrics.storage is not None and not c.fabrics.storage.nics_per_node:
        bad(
            (*at, "network"),
            "storage NICs on the nodes (fabrics.storage.nics_per_node >= 1)",
            "nics_per_node 0",
            "set fabrics.storage.nics_per_node, or network: management",
        )


def _scratch(bad: Bad, s: Storage) -> None:
    sc = s.scratch
    assert sc is not None
    at = ("storage", "scratch")
    n = len(sc.devices)
    if sc.raid == 0 and n < 2:
        bad((*at, "raid"), "raid: none for one device (RAID0 needs two or more)", "raid: 0", "set raid: none")
    if sc.raid == "none" and n > 1:
        bad(
            (*at, "raid"),
            "raid: 0 to use several devices as one scratch filesystem",
            f"raid: none with {n} devices",
            "set raid: 0, or list one device",
        )
    seen: dict[str, int] = {}
    for j, d in enumerate(sc.devices):
        if d in seen:
            bad(
                (*at, "devices", j),
                "each device once",
                f"'{d}' (also devices[{seen[d]}])",
                "remove the repeat",
            )
        seen.setdefault(d, j)


def _floors_by_sku(bad: Bad, s: Storage, skus: dict[str, Sku]) -> None:
    targets = [fs.name for fs in s.shared] + (["scratch"] if s.scratch is not None else [])
    for sku, per in s.floors_by_sku.items():
        if sku not in skus:
            bad(
                ("storage", "floors_by_sku", sku),
                f"a SKU of this spec ({', '.join(skus)})",
                f"'{sku}'",
                "use a SKU name listed under skus",
            )
        for key in per:
            if key not in targets:
                bad(
                    ("storage", "floors_by_sku", sku, key),
                    f"'scratch' or a shared filesystem name ({', '.join(targets) or 'none declared'})",
                    f"'{key}'",
                    "name a declared target",
                )


def _is_ipv4(v: str) -> bool:
    try:
        ipaddress.IPv4Address(v)
    except ValueError:
        return False
    return True
