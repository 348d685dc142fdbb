"""The compiled storage state of a node (desired ``storage``): mounts, LNet, scratch, GDS, NICs, floors.

A function of the spec's ``storage`` section, the networks that carry it and the node's SKU (its storage
NICs and its per-SKU floors); the storage role applies it and validators/test_storage.py certifies it, and
neither derives these values again. Pure and deterministic, plain JSON types only.
"""

from __future__ import annotations

from typing import Any

from clusterforge.plan.desired_fabric import nth_netdev

#: fstype in the mount unit, and the types findmnt may show for it (NFS v4 mounts show as nfs4; FUSE
#: filesystems as fuse.<name>)
FSTYPES: dict[str, tuple[str, list[str]]] = {
    "lustre": ("lustre", ["lustre"]),
    "gpfs": ("gpfs", ["gpfs"]),
    "weka": ("wekafs", ["wekafs"]),
    "nfs": ("nfs", ["nfs", "nfs4"]),
    "juicefs": ("juicefs", ["fuse.juicefs"]),
}
NFS_RDMA_PORT = 20049  # IANA nfsrdma
MD_DEVICE = "/dev/md/scratch"
MD_NAME = "scratch"
JUICEFS_BIN = "/usr/local/bin/juicefs"
JUICEFS_CACHE = "juicefs-cache"  # under the scratch mount point, when the node has scratch
#: GPUDirect Storage's kernel module and the modules-load.d file the storage role writes for it
NVIDIA_FS = {
    "name": "nvidia-fs",
    "sysfs": "nvidia_fs",
    "boot_file": "/etc/modules-load.d/clusterforge-nvidia-fs.conf",
    "role": "storage",
}
CUFILE_JSON = "/etc/cufile.json"


def unit_name(path: str) -> str:
    """The systemd mount unit of ``path`` (``systemd-escape --path --suffix=mount``) for the spec's mount
    points (components of A-Z a-z 0-9 _ . -, none starting with '.'): '/' -> '-', '-' -> '\\x2d'."""
    parts = [p.replace("-", "\\x2d") for p in path.strip("/").split("/") if p]
    return "-".join(parts) + ".mount"


def storage_input(
    storage: dict[str, Any] | None,
    storage_net: dict[str, Any] | None,
    storage_cidr: str | None,
) -> dict[str, Any] | None:
    """What node_desired needs from the cluster for storage (None: the spec has no storage section)."""
    if storage is None:
        return None
    return {"spec": storage, "network": storage_net, "cidr": storage_cidr}


def _nics(sku: dict[str, Any], inp: dict[str, Any], qos: dict[str, Any] | None) -> dict[str, Any] | None:
    net = inp["network"]
    if not net or not inp["cidr"]:
        return None
    nics = sku["storage_nics"]
    count = min(int(net.get("nics_per_node", 1)), int(nics["count"]))
    if count < 1:
        return None
    out = {
        "netdevs": [nth_netdev(str(nics["netdev"]), i) for i in range(count)],
        "mtu": int(net["mtu"]),
        "speed_gbps": int(net["speed_gbps"]),
        "cidr": inp["cidr"],
    }
    if net.get("lossless") and qos is not None:
        # RoCE storage: the compute rails' lossless QoS, the same compiled policy (desired.roce_qos)
        out["qos"] = qos
    return out


def _floors(fl: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in sorted(fl.items()) if v is not None}


def _netdevs(fs: dict[str, Any], nics: dict[str, Any] | None, sku: dict[str, Any]) -> list[str]:
    if fs["network"] == "storage":
        return list(nics["netdevs"]) if nics else []
    return [str(sku["management_nic"]["netdev"])]


def _lnet_net(fs: dict[str, Any]) -> str:
    return "o2ib0" if fs["transport"] == "rdma" else "tcp0"


def _mount(
    fs: dict[str, Any], nics: dict[str, Any] | None, sku: dict[str, Any], scratch_mp: str | None, over: Any
) -> dict[str, Any]:
    kind = str(fs["type"])
    fstype, seen = FSTYPES[kind]
    opts = ["_netdev", *fs["options"]]
    expect = []  # options the kernel shows in findmnt (clusterforge's own, derived from fields)
    servers = list(fs["servers"])
    if kind == "nfs":
        source = f"{servers[0]}:{fs['export']}"
        if fs["transport"] == "rdma":
            opts += ["proto=rdma", f"port={NFS_RDMA_PORT}"]
            expect += ["proto=rdma"]
        if fs["nconnect"]:
            opts.append(f"nconnect={fs['nconnect']}")
            expect.append(f"nconnect={fs['nconnect']}")
    elif kind == "lustre":
        net = _lnet_net(fs).removesuffix("0")
        source = ":".join(f"{s}@{net}" for s in servers) + f":/{fs['export']}"
    elif kind == "weka":
        source = ",".join(servers) + f"/{fs['export']}"
    elif kind == "gpfs":
        source = str(fs["export"])
    else:  # juicefs: the metadata URL is the source (mount.juicefs)
        source = str(fs["metadata"])
        if scratch_mp and not any(o.startswith("cache-dir=") for o in opts):
            opts.append(f"cache-dir={scratch_mp}/{JUICEFS_CACHE}")
    return {
        "name": fs["name"],
        "type": kind,
        "fstype": fstype,
        "fstypes_seen": seen,
        "source": source,
        "target": fs["mountpoint"],
        "options": opts,
        "expect_options": ["rw", *expect],
        "unit": unit_name(str(fs["mountpoint"])),
        "network": fs["network"],
        "netdevs": _netdevs(fs, nics, sku),
        "transport": fs["transport"],
        "floors": _floors(over if over is not None else fs["floors"]),
    }


def _lnet(
    shared: list[dict[str, Any]], nics: dict[str, Any] | None, sku: dict[str, Any]
) -> dict[str, Any] | None:
    """LNet networks of the node's Lustre mounts: o2ib0 (rdma) / tcp0 on the NICs that carry them; the
    ``networks=`` option of the lnet module and the same as lnetctl's import YAML (lnet.conf)."""
    nets: dict[str, list[str]] = {}
    for fs in shared:
        if fs["type"] != "lustre":
            continue
        for dev in _netdevs(fs, nics, sku):
            devs = nets.setdefault(_lnet_net(fs), [])
            if dev not in devs:
                devs.append(dev)
    if not nets:
        return None
    return {
        "networks": [{"net": n, "interfaces": devs} for n, devs in sorted(nets.items())],
        "modprobe": ",".join(f"{n}({','.join(devs)})" for n, devs in sorted(nets.items())),
        "cidr": nics["cidr"] if nics else None,
    }


def _scratch(sc: dict[str, Any] | None, over: Any) -> dict[str, Any] | None:
    if sc is None:
        return None
    raid = sc["raid"] == 0
    return {
        "devices": list(sc["devices"]),
        "raid": "raid0" if raid else "none",
        "md_device": MD_DEVICE if raid else None,
        "md_name": MD_NAME if raid else None,
        "device": MD_DEVICE if raid else sc["devices"][0],
        "filesystem": sc["filesystem"],
        "target": sc["mountpoint"],
        "options": list(sc["options"]),
        "unit": unit_name(str(sc["mountpoint"])),
        "floors": _floors(over if over is not None else sc["floors"]),
    }


def storage_desired(
    sku: dict[str, Any], inp: dict[str, Any] | None, qos: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The storage state of a node of ``sku`` (the plan's SKU entry); None when the spec declares none.
    ``qos``: the node's RoCE QoS policy (desired.roce_qos), put on the storage NICs when the storage network
    is lossless (``nics.qos``)."""
    if inp is None:
        return None
    spec = inp["spec"]
    over = spec.get("floors_by_sku", {}).get(sku["name"], {})
    # the storage NICs are configured and certified when a shared filesystem travels over them
    uses_net = any(fs["network"] == "storage" for fs in spec.get("shared", []))
    nics = _nics(sku, inp, qos) if uses_net else None
    sc = _scratch(spec.get("scratch"), over.get("scratch"))
    shared = list(spec.get("shared", []))
    mounts = [_mount(fs, nics, sku, sc["target"] if sc else None, over.get(fs["name"])) for fs in shared]
    types = sorted({m["type"] for m in mounts})
    juicefs = next((fs for fs in shared if fs["type"] == "juicefs"), None)
    return {
        "mounts": mounts,
        "types": types,
        "lnet": _lnet(shared, nics, sku),
        "scratch": sc,
        "gds": {"enabled": bool(spec.get("gds")), "cufile_json": CUFILE_JSON, "module": dict(NVIDIA_FS)},
        "juicefs": (
            {"binary": JUICEFS_BIN, "url": juicefs["client_url"], "sha256": juicefs["client_sha256"]}
            if juicefs
            else None
        ),
        "nics": nics,
        "io_test": dict(spec["io_test"]),
    }


def io_targets(storage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The I/O targets of a node's desired storage (`storage_desired`), scratch first, then each shared mount:
    name, mount point, floors, and whether fio may use O_DIRECT (FUSE filesystems such as JuiceFS may refuse
    it: buffered I/O there, fio invalidates the cache first)."""
    st = storage or {}
    out = []
    if st.get("scratch"):
        sc = st["scratch"]
        out.append({"name": "scratch", "target": sc["target"], "floors": sc["floors"], "direct": True})
    for m in st.get("mounts", []):
        out.append(
            {
                "name": m["name"],
                "target": m["target"],
                "floors": m["floors"],
                "direct": m["type"] != "juicefs",
            }
        )
    return out
