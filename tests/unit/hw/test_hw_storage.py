"""Storage parsers on real captures: gdscheck -p, fio JSON, findmnt JSON, mount lines, lsblk JSON."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError, findmnt, fio, gdscheck, lsblk

from .conftest import head

GDS_OLD = "gdscheck-p__a100-pcie-40gb-x2-gds1.0-nvmeof-pgstrom__2.txt"
GDS_H100 = "gdscheck-p__h100-pcie-supermicro-as2015cs-gds1.15-el10-pgstrom__1.txt"
GDS_L40S = "gdscheck-p__l40s-poweredge-r760xa-gds1.13-ocp-pod-schmaustech__4.txt"
FIO = "fio-json__azure-gpu-vm-nvme0n1-randrw-4k-qd64-4jobs-lat-percentiles-superbench__1.txt"
FINDMNT = "findmnt-json__k8s-gpu-node-lvm-kubelet-bind-df-gpud__1.txt"
MOUNT_NFS = "mount-grep-nfs__ocp-pod-nfs4-over-rdma-trident-gds-schmaustech__1.txt"
LSBLK_DELL = "lsblk-json__gpu-node-dell-7450-boot-intel-p5520x6-gpud__1.txt"
LSBLK_LVM = "lsblk-json__gpu-node-samsung-pm1743-lvm-xfs-vfat-usb-gadget-gpud__2.txt"

Real = Callable[[str], str]


# ---- gdscheck -p ---------------------------------------------------------------------------------
def test_gdscheck_old_layout(real: Real) -> None:
    r = gdscheck.parse(real(GDS_OLD))
    assert (r.gds_version, r.nvidia_fs_version, r.libcufile_version) == ("1.0.0.82", "2.7", "2.4")
    assert r.supported("NVMe") and r.supported("NVMeOF") and not r.supported("NFS")
    assert r.drivers["Mellanox PeerDirect"] == "Enabled"
    assert r.drivers["rdma library"] == "Not Loaded (libcufile_rdma.so)"
    assert [(g.index, g.name, g.bar_size_mib, g.supports_gds) for g in r.gpus] == [
        (0, "NVIDIA A100-PCIE-40GB", 65536, True),
        (1, "NVIDIA A100-PCIE-40GB", 65536, True),
    ]
    assert r.platform == {"IOMMU": "disabled"} and r.verified
    assert r.properties["properties.use_compat_mode"] == "true"
    assert r.properties["fs.lustre.posix_gds_min_kb"] == "0"


def test_gdscheck_new_layout_h100(real: Real) -> None:
    r = gdscheck.parse(real(GDS_H100))
    assert r.gds_version == "1.15.1.6" and r.nvidia_fs_version == "2.26"
    assert r.supported("NFS") and not r.supported("WekaFS") and not r.supported("NVMe P2PDMA")
    assert r.drivers[gdscheck.FS_ROWS["lustre"]] == "Unsupported"
    assert r.gpus == (gdscheck.GdsGpu(0, "NVIDIA H100 PCIe", 131072, True),)
    assert r.platform["Cuda Driver Version Installed"] == "13000"
    assert r.verified


def test_gdscheck_trailing_spaces_l40s(real: Real) -> None:
    r = gdscheck.parse(real(GDS_L40S))
    assert r.properties["properties.posix_pool_slab_size_kb"] == "4 1024 16384"
    assert r.gpus[0].name == "NVIDIA L40S" and r.supported("NVMeOF") and r.verified


def test_gdscheck_cut_short_is_an_error(real: Real) -> None:
    with pytest.raises(ParseError, match="PLATFORM INFO"):
        gdscheck.parse(head(real(GDS_H100), 40))
    with pytest.raises(ParseError, match="GDS release"):
        gdscheck.parse("gdscheck: command output from something else\n")


def test_gdscheck_failed_verification_is_not_verified(real: Real) -> None:
    text = real(GDS_L40S).replace("Platform verification succeeded", "Platform verification error")
    assert not gdscheck.parse(text).verified


# ---- fio -----------------------------------------------------------------------------------------
def test_fio_randrw_values(real: Real) -> None:
    r = fio.parse(real(FIO))
    assert r.version == "fio-3.16" and len(r.jobs) == 1 and not r.errors
    j = r.jobs[0]
    assert (j.name, j.rw) == ("rand_read_write", "randrw")
    assert j.read == fio.FioIo(10463010816, 348743777.0, 85138.890741, 30002)
    assert j.write.iops == pytest.approx(85066.128925)
    assert r.total("read").bw_bytes == 348743777.0


def test_fio_warning_lines_before_the_json(real: Real) -> None:
    r = fio.parse("fio: file hash not empty on exit\n" + real(FIO))
    assert r.notes == ("fio: file hash not empty on exit",) and r.jobs[0].read.iops > 85000


def test_fio_job_error_and_sums(real: Real) -> None:
    doc = json.loads(real(FIO))
    second = dict(doc["jobs"][0], jobname="b", error=5)
    doc["jobs"].append(second)
    r = fio.parse(json.dumps(doc))
    assert r.errors == {"b": 5}
    assert r.total("read").bw_bytes == 2 * 348743777.0


@pytest.mark.parametrize(
    "text",
    ["", "fio: engine libaio not loadable\n", '{"fio version": "fio-3.16", "jobs": []}', '{"jobs": [{}]}'],
)
def test_fio_bad_outputs(text: str) -> None:
    with pytest.raises(ParseError):
        fio.parse(text)


# ---- findmnt / mount -----------------------------------------------------------------------------
def test_findmnt_df_human_sizes(real: Real) -> None:
    (m,) = findmnt.parse_json(real(FINDMNT))
    assert (m.target, m.source, m.fstype) == ("/var/lib/kubelet", "/dev/mapper/vg-data[/kubelet]", "ext4")
    assert m.avail_bytes == int(10.1 * (1 << 40)) and m.size_bytes == int(11.6 * (1 << 40))
    assert m.options == ()


def test_findmnt_nested_children_and_byte_numbers() -> None:
    text = json.dumps(
        {
            "filesystems": [
                {
                    "target": "/",
                    "source": "/dev/sda1",
                    "fstype": "xfs",
                    "options": "rw,relatime",
                    "avail": 1024,
                    "children": [
                        {"target": "/raid", "source": "/dev/md127", "fstype": "xfs", "options": "rw,noatime"}
                    ],
                }
            ]
        }
    )
    mounts = findmnt.parse_json(text)
    assert [m.target for m in mounts] == ["/", "/raid"]
    assert mounts[0].avail_bytes == 1024 and mounts[1].option("noatime") == ""


def test_mount_line_nfs_over_rdma(real: Real) -> None:
    (m,) = findmnt.parse_mount_lines(real(MOUNT_NFS))
    assert (m.target, m.fstype) == ("/mnt", "nfs4")
    assert m.source.startswith("192.168.10.101:/trident_pvc_")
    assert m.option("proto") == "rdma" and m.option("port") == "20049" and m.option("nconnect") is None


def test_proc_mounts_escapes() -> None:
    (m,) = findmnt.parse_proc_mounts("srv:/a\\040b /mnt/x\\040y nfs4 rw,proto=tcp 0 0\n")
    assert (m.source, m.target) == ("srv:/a b", "/mnt/x y")


@pytest.mark.parametrize("text", ["", "{}", '{"filesystems": [{"source": "x"}]}', "not json"])
def test_findmnt_bad_outputs(text: str) -> None:
    with pytest.raises(ParseError):
        findmnt.parse_json(text)


def test_findmnt_bad_size() -> None:
    with pytest.raises(ParseError, match="not a size"):
        findmnt.parse_json('{"filesystems": [{"target": "/", "avail": "lots"}]}')


# ---- lsblk ---------------------------------------------------------------------------------------
def test_lsblk_partitions_and_mounts(real: Real) -> None:
    devs = {d.name: d for d in lsblk.parse(real(LSBLK_DELL))}
    nv3 = devs["/dev/nvme3n1"]
    assert nv3.type == "disk" and nv3.size_bytes == 7681501126656 and nv3.fstype is None
    (part,) = nv3.children
    assert (part.name, part.type, part.fstype, part.mountpoints) == (
        "/dev/nvme3n1p1",
        "part",
        "ext4",
        ("/mnt/test-cache/vol-0",),
    )


def test_lsblk_lvm_child_and_null_fields(real: Real) -> None:
    devs = {d.name: d for d in lsblk.parse(real(LSBLK_LVM))}
    nv0 = devs["/dev/nvme0n1"]
    assert nv0.fstype == "LVM2_member" and nv0.mountpoints == ()
    assert [(c.type, c.fstype, c.mountpoints) for c in nv0.children] == [
        ("lvm", "ext4", ("/lepton-data-disk",))
    ]
    assert devs["/dev/sda"].size_bytes == 0
    assert [d.name for d in devs["/dev/nvme4n1"].walk()] == [
        "/dev/nvme4n1",
        "/dev/nvme4n1p1",
        "/dev/nvme4n1p2",
    ]


def test_lsblk_mountpoints_list_and_bad_sizes() -> None:
    text = (
        '{"blockdevices": [{"name": "/dev/loop0", "type": "loop", "size": "1048576", "mountpoints": [null]}]}'
    )
    (d,) = lsblk.parse(text)
    assert d.mountpoints == () and d.size_bytes == 1048576
    with pytest.raises(ParseError, match="--bytes"):
        lsblk.parse('{"blockdevices": [{"name": "/dev/sda", "size": "1.8T"}]}')
    with pytest.raises(ParseError):
        lsblk.parse('{"devices": []}')


def test_findmnt_tree_default_columns_stacked_mounts(real: Real) -> None:
    """findmnt-json__h100-vm-firecracker-device__1.txt - plain ``findmnt -J`` (tree, default columns, no
    sizes) captured by scripts/capture-node.sh on a lent H100 VM: every nested mount comes out, a target
    mounted twice (``/dev/shm``, ``/dev/pts``: one mount over another) stays twice, sizes are unknown."""
    mounts = findmnt.parse_json(real("findmnt-json__h100-vm-firecracker-device__1.txt"))
    assert len(mounts) == 11 and mounts[0].target == "/" and mounts[0].source == "/dev/vda"
    assert [m.target for m in mounts].count("/dev/shm") == 2
    nv = next(m for m in mounts if m.target == "/usr/local/nvidia")
    assert (nv.source, nv.fstype, nv.options[0]) == ("/dev/vdb", "squashfs", "ro")
    assert all(m.size_bytes is None and m.avail_bytes is None for m in mounts)


# ---- the lent H100 VM (no udev): lsblk and findmnt in the storage validators' own forms -----------------
VM_LSBLK_VDA = "lsblk-json__h100-vm-virtio-vda-ext4-root-fstype-null-no-udev-device__3.txt"
VM_LSBLK_EXIT64 = "lsblk-json__h100-vm-vda-plus-absent-nvme0n1-exit64-device__4.txt"
VM_LSBLK_EXIT32 = "lsblk-json__h100-vm-absent-nvme0n1-exit32-empty-device__5.txt"
VM_FINDMNT = "findmnt-json__h100-vm-list-bytes-validator-columns-device__2.txt"


def test_lsblk_without_udev_has_no_fstype(real: Real) -> None:
    """The VM's root /dev/vda is a mounted ext4 (findmnt says so) yet lsblk's FSTYPE is null: lsblk takes it
    from udev's database, which the VM lacks - lsblk knows the device and its mount point, not its type."""
    (vda,) = lsblk.parse(real(VM_LSBLK_VDA))
    assert (vda.name, vda.type, vda.fstype, vda.mountpoints) == ("/dev/vda", "disk", None, ("/",))
    assert vda.size_bytes == 256 << 30 and vda.children == ()


def test_lsblk_absent_devices_exit_32_and_64(real: Real) -> None:
    """Exit 32 (none found) prints an empty list; exit 64 (some found) lists only the devices present."""
    assert lsblk.parse(real(VM_LSBLK_EXIT32)) == []
    assert [d.name for d in lsblk.parse(real(VM_LSBLK_EXIT64))] == ["/dev/vda"]


def test_findmnt_list_bytes_validator_columns(real: Real) -> None:
    mounts = findmnt.parse_json(real(VM_FINDMNT))
    assert len(mounts) == 11 and [m.target for m in mounts].count("/dev/pts") == 2
    root = next(m for m in mounts if m.target == "/")
    assert (root.source, root.fstype, root.size_bytes) == ("/dev/vda", "ext4", 270553174016)
    assert root.avail_bytes == 68687425536 and root.option("resuid") == "65534"
    nv = next(m for m in mounts if m.target == "/usr/local/nvidia")
    assert (nv.source, nv.fstype, nv.avail_bytes) == ("/dev/vdb", "squashfs", 0)
