"""The spec's `storage` section: shared filesystems, node-local scratch, GPUDirect Storage and I/O floors.

Every string here reaches a mount unit, a modprobe option, a config file or a command argument on a node,
so each has a type that admits only what the value can be (docs/security.md); cross-field rules (which
options go with which type, a RAID level that fits the device count, floors per SKU) are in
`checks_storage.py`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterforge.spec.values import Host, Key, SkuName, _checked, _matches

MAX_SHARED = 16
MAX_SCRATCH_DEVICES = 32


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


MountPoint = Annotated[
    StrictStr,
    _checked(
        lambda v: _matches(r"(/[A-Za-z0-9_.-]+)+")(v) and "/." not in v and len(v) <= 200,
        "an absolute path of A-Z a-z 0-9 _ . - components, not starting with '.' and not '/' itself "
        "(e.g. /lustre, /raid)",
        "write the mount point as a plain absolute path such as /mnt/data",
    ),
]
BlockDevice = Annotated[
    StrictStr,
    _checked(
        _matches(r"/dev/[A-Za-z0-9_-]+(/[A-Za-z0-9_.:-]+){0,2}"),
        "a block device path under /dev (e.g. /dev/nvme1n1 or /dev/disk/by-id/nvme-...)",
        "name the device by its /dev path; a stable /dev/disk/by-id path is best",
    ),
]
MountOption = Annotated[
    StrictStr,
    _checked(
        _matches(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+=-]{0,127}"),
        "one mount option: A-Z a-z 0-9 and _ . : / @ + = - (no comma, space or quote)",
        "list each option as its own item, e.g. [noatime, vers=4.2]",
    ),
]
ExportName = Annotated[
    StrictStr,
    _checked(
        _matches(r"/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+){0,15}"),
        "an export path (NFS, e.g. /export/data) or a filesystem name (Lustre fsname, Weka or GPFS "
        "filesystem): A-Z a-z 0-9 _ . - and '/'",
        "write the server's export path or filesystem name",
    ),
]
MetaUrl = Annotated[
    StrictStr,
    _checked(
        _matches(r"(redis|rediss|postgres|mysql|tikv|etcd|sqlite3)://[A-Za-z0-9._~:/@%+=,-]{1,500}"),
        "a JuiceFS metadata URL: redis://, postgres://, mysql://, tikv://, etcd:// or sqlite3:// and host/"
        "path characters only (no quote, space, '?', '&', '$' or brace)",
        "write e.g. redis://10.20.0.5:6379/1",
    ),
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ArtifactUrl = Annotated[str, Field(max_length=2048, pattern=r"^(https?|file)://[A-Za-z0-9._~:/?#@%+=&,-]+$")]


class IoFloors(_Strict):
    """What a filesystem must reach on a node (each unset floor is not checked). Bandwidths in GB/s
    (10^9 bytes per second, fio's ``bw_bytes``), IOPS as fio reports them, free space in GiB."""

    seq_read_gbs: float | None = Field(default=None, gt=0, le=10_000)
    seq_write_gbs: float | None = Field(default=None, gt=0, le=10_000)
    randread_iops: float | None = Field(default=None, gt=0, le=1e9)
    checkpoint_write_gbs: float | None = Field(default=None, gt=0, le=10_000)
    min_free_gib: float | None = Field(default=None, ge=0, le=1e9)


class SharedFs(_Strict):
    """A shared filesystem every node mounts."""

    name: Key = Field(description="short name, used in check ids and messages (e.g. 'data')")
    type: Literal["lustre", "gpfs", "weka", "nfs", "juicefs"]
    servers: list[Host] = Field(
        default_factory=list,
        max_length=16,
        description="NFS server, Lustre MGS nodes (failover order), Weka backends; unused for GPFS/JuiceFS",
    )
    export: ExportName | None = Field(
        default=None, description="NFS export path; Lustre fsname; Weka / GPFS filesystem name"
    )
    metadata: MetaUrl | None = Field(default=None, description="JuiceFS metadata engine URL")
    mountpoint: MountPoint
    options: list[MountOption] = Field(default_factory=list, max_length=32)
    network: Literal["storage", "management"] = Field(
        default="storage", description="which network carries it (fabrics.storage or fabrics.management)"
    )
    transport: Literal["tcp", "rdma"] = Field(
        default="tcp", description="rdma: NFS over RDMA (proto=rdma), Lustre LNet o2ib; tcp otherwise"
    )
    nconnect: int | None = Field(default=None, ge=1, le=16, description="NFS: TCP connections per server")
    client_url: ArtifactUrl | None = Field(default=None, description="JuiceFS: the client binary's URL")
    client_sha256: Sha256 | None = Field(default=None, description="JuiceFS: SHA-256 of the client binary")
    floors: IoFloors = IoFloors()


class Scratch(_Strict):
    """Node-local NVMe scratch: one device, or a RAID0 array across several, formatted and mounted."""

    devices: list[BlockDevice] = Field(min_length=1, max_length=MAX_SCRATCH_DEVICES)
    raid: Literal[0, "none"] = Field(default="none", description="0: mdadm RAID0 across the devices")
    filesystem: Literal["xfs", "ext4"] = "xfs"
    mountpoint: MountPoint = "/raid"
    options: list[MountOption] = Field(default_factory=lambda: ["noatime"], max_length=32)
    floors: IoFloors = IoFloors()


class IoTest(_Strict):
    """How the full tier measures: fio's file size and run time per job, the checkpoint file's size."""

    size_gib: float = Field(default=4, gt=0, le=4096)
    runtime_s: int = Field(default=20, ge=1, le=3600)
    checkpoint_gib: float = Field(default=8, gt=0, le=65536)


class Storage(_Strict):
    shared: list[SharedFs] = Field(default_factory=list, max_length=MAX_SHARED)
    scratch: Scratch | None = None
    gds: bool = Field(default=False, description="GPUDirect Storage: nvidia-fs module and /etc/cufile.json")
    io_test: IoTest = IoTest()
    floors_by_sku: dict[SkuName, dict[Key, IoFloors]] = Field(
        default_factory=dict,
        description="per SKU: 'scratch' or a shared filesystem's name -> floors replacing that target's",
    )
