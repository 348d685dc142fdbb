"""validators/test_storage.py against a node that answers from real captures (gdscheck -p, fio JSON,
lsblk JSON: tests/fixtures/real/) or from outputs written here. The node's storage is the lab spec plus a
storage section (an NFS mount over RDMA, a JuiceFS mount, one scratch device, GDS on)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, ToolMissing
from clusterforge.plan.build import build_plan
from clusterforge.plan.expect import NodeExpect, nodes_of
from clusterforge.spec import load_spec_text
from tests.conftest import CLUSTERS, without_storage

from .conftest import FakeNode, real, validator

st = validator("storage")
GDS = "gdscheck-p__h100-pcie-supermicro-as2015cs-gds1.15-el10-pgstrom__1.txt"  # NVMe + NFS Supported
FIO = "fio-json__azure-gpu-vm-nvme0n1-randrw-4k-qd64-4jobs-lat-percentiles-superbench__1.txt"
LSBLK = (
    "lsblk-json__gpu-node-dell-7450-boot-intel-p5520x6-gpud__1.txt"  # nvme3n1p1 ext4 /mnt/test-cache/vol-0
)
STORAGE = """storage:
  shared:
    - name: home
      type: nfs
      servers: [10.246.0.2]
      export: /export/home
      mountpoint: /home
      transport: rdma
      floors: {min_free_gib: 100, randread_iops: 50000, checkpoint_write_gbs: 0.3}
    - name: jfs
      type: juicefs
      metadata: redis://10.244.0.1:6379/1
      mountpoint: /jfs
      network: management
      client_url: http://10.244.0.1:8780/juicefs/juicefs
      client_sha256: "%s"
  scratch: {devices: [/dev/nvme3n1p1], filesystem: ext4, mountpoint: /mnt/test-cache/vol-0,
            floors: {min_free_gib: 10, randread_iops: 100000}}
  gds: true
""" % ("c" * 64)


def _node(storage: str = STORAGE) -> NodeExpect:
    text = without_storage((CLUSTERS / "lab.yaml").read_text(encoding="utf-8")) + storage
    return nodes_of(build_plan(load_spec_text(text, "lab.yaml")).doc)["ib-01"]


@pytest.fixture(scope="module")
def node() -> NodeExpect:
    return _node()


def findmnt_json(**over: Any) -> str:
    fs = {
        "/home": {
            "source": "10.246.0.2:/export/home",
            "fstype": "nfs4",
            "options": "rw,relatime,vers=4.2,proto=rdma,port=20049",
            "avail": 200 << 30,
        },
        "/jfs": {
            "source": "JuiceFS:jfs",
            "fstype": "fuse.juicefs",
            "options": "rw,relatime",
            "avail": 1 << 40,
        },
        "/mnt/test-cache/vol-0": {
            "source": "/dev/nvme3n1p1",
            "fstype": "ext4",
            "options": "rw",
            "avail": 50 << 30,
        },
    }
    for k, v in over.items():
        path = "/" + k.replace("__", "/").replace("_", "-") if k != "home" and k != "jfs" else "/" + k
        fs[path] = v
    return json.dumps({"filesystems": [{"target": t, **v} for t, v in fs.items() if v is not None]})


def answers(**over: Any) -> dict[str, Any]:
    return {st.FINDMNT: (0, findmnt_json(**over))}


# ---- mounts, free space ----------------------------------------------------------------------------
def test_mounts_pass(node: NodeExpect) -> None:
    st.test_mounts(node, FakeNode(answers()))


def test_an_unmounted_filesystem_fails_naming_it(node: NodeExpect) -> None:
    with pytest.raises(CheckFailed, match=r"found home=not mounted at /home"):
        st.test_mounts(node, FakeNode(answers(home=None)))


def test_wrong_type_and_missing_rdma_fail(node: NodeExpect) -> None:
    over = {"source": "10.246.0.2:/export/home", "fstype": "nfs4", "options": "rw,proto=tcp", "avail": 1}
    with pytest.raises(CheckFailed, match=r"home=/home without proto=rdma"):
        st.test_mounts(node, FakeNode(answers(home=over)))
    with pytest.raises(CheckFailed, match=r"jfs=/jfs is ext4 from /dev/sda1"):
        st.test_mounts(
            node, FakeNode(answers(jfs={"source": "/dev/sda1", "fstype": "ext4", "options": "rw"}))
        )


def test_free_space_floor_names_the_target(node: NodeExpect) -> None:
    st.test_free_space(node, FakeNode(answers()))
    low = {"source": "x:/y", "fstype": "nfs4", "options": "rw,proto=rdma", "avail": 5 << 30}
    with pytest.raises(CheckFailed, match=r"home=5.0 GiB free on /home \(floor 100 GiB\)"):
        st.test_free_space(node, FakeNode(answers(home=low)))


def test_free_space_without_avail_is_an_error(node: NodeExpect) -> None:
    with pytest.raises(CheckError, match="no AVAIL for /home"):
        st.test_free_space(node, FakeNode(answers(home={"source": "x", "fstype": "nfs4", "options": "rw"})))


# ---- writable -----------------------------------------------------------------------------------------
def _write_cmd(target: str) -> str:
    return st.write_cmd(target)


def test_writable_and_not_mounted(node: NodeExpect) -> None:
    targets = ["/mnt/test-cache/vol-0", "/home", "/jfs"]
    ok = {_write_cmd(t): (0, "writable\n") for t in targets}
    st.test_writable(node, FakeNode(ok))
    bad = dict(ok, **{_write_cmd("/jfs"): (0, "not-mounted\n")})
    with pytest.raises(CheckFailed, match=r"found jfs=/jfs not-mounted"):
        st.test_writable(node, FakeNode(bad))


def test_write_test_runs_only_in_a_mount_point(tmp_path: Any) -> None:
    """The snippet itself, run here: a directory that is not a mount point gets no file."""
    import subprocess

    out = subprocess.run(["sh", "-c", _write_cmd(str(tmp_path))], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "not-mounted" and list(tmp_path.iterdir()) == []


# ---- scratch -------------------------------------------------------------------------------------------
# lsblk says which devices exist and what is built on them; findmnt (the kernel's mount table) says what is
# mounted where with which filesystem. findmnt_json() and _raid_lsblk() are CONSTRUCTED outputs (written
# here); the rest are real captures (tests/fixtures/real/SOURCES.md).
VM_LSBLK_VDA = "lsblk-json__h100-vm-virtio-vda-ext4-root-fstype-null-no-udev-device__3.txt"
VM_LSBLK_EXIT64 = "lsblk-json__h100-vm-vda-plus-absent-nvme0n1-exit64-device__4.txt"
VM_LSBLK_EXIT32 = "lsblk-json__h100-vm-absent-nvme0n1-exit32-empty-device__5.txt"
VM_FINDMNT = "findmnt-json__h100-vm-list-bytes-validator-columns-device__2.txt"


def _scratch_answers(
    node: NodeExpect,
    lsblk_out: str,
    rc: int = 0,
    links: dict[str, str] | None = None,
    findmnt: str | None = None,
    **over: Any,
) -> dict[str, Any]:
    """The node's answers to the scratch check: lsblk (``lsblk_out``, exit ``rc``); ``realpath -m`` of the
    declared paths CONSTRUCTED here (each as written, or as ``links`` resolves it); findmnt (``findmnt``, or
    findmnt_json(**over), CONSTRUCTED)."""
    sc = st._st(node)["scratch"]
    paths = st.scratch_paths(sc)
    resolved = "".join(f"{(links or {}).get(p, p)}\n" for p in paths)
    return {
        st.lsblk_cmd(sc["devices"]): (rc, lsblk_out),
        st.realpath_cmd(paths): (0, resolved),
        st.FINDMNT: (0, findmnt if findmnt is not None else findmnt_json(**over)),
    }


def _with_scratch(devices: str, more: str = "") -> NodeExpect:
    return _node(
        STORAGE.replace(
            "scratch: {devices: [/dev/nvme3n1p1], filesystem: ext4, mountpoint: /mnt/test-cache/vol-0,",
            f"scratch: {{devices: [{devices}]{more},",
        )
    )


def _vm_root_as_scratch(filesystem: str) -> NodeExpect:
    """The lent H100 VM's only ext4 volume is its root (/dev/vda at /): scratch declared on it. The spec
    refuses "/" as a mount point, so the compiled scratch entry is pointed at "/" here."""
    n = _with_scratch("/dev/vda", f", filesystem: {filesystem}, mountpoint: /vm-root")
    desired = copy.deepcopy(n.desired_state)
    desired["storage"]["scratch"]["target"] = "/"
    return dataclasses.replace(n, desired_state=desired)


def test_scratch_fstype_from_the_mount_table_when_lsblk_has_none() -> None:
    """Real captures from a VM without udev: lsblk's FSTYPE is null for /dev/vda, findmnt shows it mounted
    at / as ext4 - pass; declared xfs - fail naming what the kernel has mounted there."""
    ext4, xfs = _vm_root_as_scratch("ext4"), _vm_root_as_scratch("xfs")
    vm = _scratch_answers(ext4, real(VM_LSBLK_VDA), findmnt=real(VM_FINDMNT))
    st.test_scratch(ext4, FakeNode(vm))
    with pytest.raises(
        CheckFailed,
        match=r"expected xfs on /dev/vda \(none: /dev/vda\) at /; found ext4 from /dev/vda at /\. Fix",
    ):
        st.test_scratch(xfs, FakeNode(vm))


def test_scratch_single_device_on_a_real_capture(node: NodeExpect) -> None:
    """Real lsblk (nvme3n1p1 ext4 at /mnt/test-cache/vol-0), constructed findmnt agreeing with it."""
    st.test_scratch(node, FakeNode(_scratch_answers(node, real(LSBLK))))
    other = _node(STORAGE.replace("mountpoint: /mnt/test-cache/vol-0", "mountpoint: /raid"))
    with pytest.raises(
        CheckFailed, match=r"found nothing mounted at /raid; /dev/nvme3n1p1 mounted at /mnt/test-cache/vol-0"
    ):
        st.test_scratch(other, FakeNode(_scratch_answers(other, real(LSBLK))))


BY_ID = "/dev/disk/by-id/nvme-INTEL_SSDPF2KX076T1O_PHAX0000000000000000-part1"  # CONSTRUCTED serial


def test_scratch_declared_by_id(node: NodeExpect) -> None:
    """lsblk names a device by its kernel name whatever path it was given (util-linux lsblk.c: the name
    comes from sysfs), so a /dev/disk/by-id path (the spec's advice) is resolved on the node first. Without
    udev the by-id link does not exist: realpath -m prints it as written and lsblk finds nothing (exit 32)."""
    by_id = _with_scratch(BY_ID, ", filesystem: ext4, mountpoint: /mnt/test-cache/vol-0")
    linked = _scratch_answers(by_id, real(LSBLK), links={BY_ID: "/dev/nvme3n1p1"})
    st.test_scratch(by_id, FakeNode(linked))
    with pytest.raises(CheckFailed, match=rf"found missing: {BY_ID}\. Fix"):
        st.test_scratch(by_id, FakeNode(_scratch_answers(by_id, real(VM_LSBLK_EXIT32), rc=32)))
    with pytest.raises(CheckFailed, match=rf"found missing: {BY_ID} \(/dev/nvme9n1\)\. Fix"):
        gone = _scratch_answers(by_id, real(VM_LSBLK_EXIT32), rc=32, links={BY_ID: "/dev/nvme9n1"})
        st.test_scratch(by_id, FakeNode(gone))


def test_scratch_other_device_or_filesystem_at_the_mount_point_fails(node: NodeExpect) -> None:
    """CONSTRUCTED findmnt outputs: another device mounted at scratch's mount point (scratch's own device
    mounted elsewhere), then the right device with another filesystem. lsblk is the real capture."""
    swapped = _scratch_answers(
        node,
        real(LSBLK),
        mnt__test_cache__vol_0={"source": "/dev/sdb1", "fstype": "ext4", "options": "rw"},
        other={"source": "/dev/nvme3n1p1", "fstype": "ext4", "options": "rw"},
    )
    with pytest.raises(CheckFailed) as exc:
        st.test_scratch(node, FakeNode(swapped))
    assert exc.value.found == "ext4 from /dev/sdb1 at /mnt/test-cache/vol-0; /dev/nvme3n1p1 mounted at /other"
    assert exc.value.expected == "ext4 on /dev/nvme3n1p1 (none: /dev/nvme3n1p1) at /mnt/test-cache/vol-0"
    assert "storage" in exc.value.fix
    xfs = _scratch_answers(
        node,
        real(LSBLK),
        mnt__test_cache__vol_0={"source": "/dev/nvme3n1p1", "fstype": "xfs", "options": "rw"},
    )
    with pytest.raises(CheckFailed, match=r"found xfs from /dev/nvme3n1p1 at /mnt/test-cache/vol-0\. Fix"):
        st.test_scratch(node, FakeNode(xfs))
    unmounted = _scratch_answers(node, real(LSBLK), mnt__test_cache__vol_0=None)
    with pytest.raises(CheckFailed, match=r"found nothing mounted at /mnt/test-cache/vol-0\. Fix"):
        st.test_scratch(node, FakeNode(unmounted))


def test_scratch_devices_absent_are_measured(node: NodeExpect) -> None:
    """lsblk exits 32 when none of the named devices exists (64: some): the devices are absent - fail naming
    them, not an error (real captures from an H100 VM without NVMe)."""
    with pytest.raises(CheckFailed, match=r"scratch devices: .*found missing: /dev/nvme3n1p1"):
        st.test_scratch(node, FakeNode(_scratch_answers(node, real(VM_LSBLK_EXIT32), rc=32)))
    with pytest.raises(CheckFailed, match=r"scratch devices: .*found missing: /dev/nvme3n1p1"):
        st.test_scratch(node, FakeNode(_scratch_answers(node, "", rc=32)))
    raid = _with_scratch("/dev/vda, /dev/nvme0n1", ", raid: 0, mountpoint: /raid")
    with pytest.raises(CheckFailed, match=r"scratch devices: .*found missing: /dev/nvme0n1\. Fix"):
        st.test_scratch(raid, FakeNode(_scratch_answers(raid, real(VM_LSBLK_EXIT64), rc=64)))


def test_scratch_without_its_tools_is_an_error(node: NodeExpect) -> None:
    """A tool that is not there measured nothing: error naming it, never a fail."""
    full = _scratch_answers(node, real(LSBLK))
    for cmd, tool in (
        (st.FINDMNT, "findmnt"),
        (st.lsblk_cmd(["/dev/nvme3n1p1"]), "lsblk"),
        (st.realpath_cmd(["/dev/nvme3n1p1"]), "realpath"),
    ):
        with pytest.raises(ToolMissing, match=f"{tool} missing"):
            st.test_scratch(node, FakeNode({k: v for k, v in full.items() if k != cmd}))


def test_scratch_realpath_answer_not_one_path_a_line_is_an_error(node: NodeExpect) -> None:
    answers_ = _scratch_answers(node, real(LSBLK)) | {st.realpath_cmd(["/dev/nvme3n1p1"]): (0, "")}
    with pytest.raises(CheckError, match="not recognised"):
        st.test_scratch(node, FakeNode(answers_))


def _raid_lsblk(members: int, fstype: str | None = "xfs") -> str:
    md = {"name": "/dev/md127", "type": "raid0", "fstype": fstype, "mountpoint": "/raid", "size": 2}
    devs = [
        {
            "name": f"/dev/nvme{i}n1",
            "type": "disk",
            "fstype": "linux_raid_member",
            "mountpoint": None,
            "size": 1,
            "children": [md] if i <= members else [],
        }
        for i in (1, 2)
    ]
    return json.dumps({"blockdevices": devs})


def test_scratch_raid0() -> None:
    """CONSTRUCTED lsblk and findmnt: one md array over both devices, mounted at /raid (as /dev/md127, the
    kernel's name, or as the plan's /dev/md/scratch when that links to it); lsblk without FSTYPE on the
    array still passes; another array mounted there fails."""
    raid = _with_scratch("/dev/nvme1n1, /dev/nvme2n1", ", raid: 0, mountpoint: /raid")
    link = {"/dev/md/scratch": "/dev/md127"}
    md = {"source": "/dev/md127", "fstype": "xfs", "options": "rw,noatime"}
    st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2), links=link, raid=md)))
    st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2, None), links=link, raid=md)))
    as_named = md | {"source": "/dev/md/scratch"}
    st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2), links=link, raid=as_named)))
    stale = {"/dev/md/scratch": "/dev/md126"}  # the plan's name points at another array: not scratch
    with pytest.raises(CheckFailed, match=r"found xfs from /dev/md/scratch at /raid\. Fix"):
        st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2), links=stale, raid=as_named)))
    other_md = md | {"source": "/dev/md126"}
    with pytest.raises(CheckFailed, match=r"found xfs from /dev/md126 at /raid\. Fix"):
        st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2), links=stale, raid=other_md)))
    with pytest.raises(CheckFailed, match=r"scratch RAID0.*over \['/dev/nvme1n1'\]"):
        st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(1), links=link, raid=md)))
    ext4 = md | {"fstype": "ext4"}
    with pytest.raises(CheckFailed, match=r"found ext4 from /dev/md127 at /raid\. Fix"):
        st.test_scratch(raid, FakeNode(_scratch_answers(raid, _raid_lsblk(2), links=link, raid=ext4)))


# ---- NICs, LNet ----------------------------------------------------------------------------------------
def _nic_answers(mtu: str = "9000", speed: str = "200000", state: str = "up") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dev in ("stor0", "stor1"):
        exists, operstate, m, s = st.nic_cmds(dev)
        out |= {exists: (0, "yes\n"), operstate: (0, state + "\n"), m: (0, mtu + "\n"), s: (0, speed + "\n")}
    return out


def test_storage_nics(node: NodeExpect) -> None:
    st.test_nics(node, FakeNode(_nic_answers()))
    with pytest.raises(CheckFailed, match=r"stor0=up, mtu 1500, speed 200000 Mb/s"):
        st.test_nics(node, FakeNode(_nic_answers(mtu="1500")))
    with pytest.raises(CheckFailed, match=r"stor1=down"):
        st.test_nics(node, FakeNode(_nic_answers(state="down")))


def test_lnet_networks() -> None:
    lus = _node(STORAGE.replace("type: nfs", "type: lustre").replace("/export/home", "lus1"))
    st.test_lnet(lus, FakeNode({st.LNET: (0, "o2ib0(stor0,stor1)\n")}))
    with pytest.raises(CheckFailed, match="lnet not loaded"):
        st.test_lnet(lus, FakeNode({st.LNET: (0, "absent\n")}))


# ---- GDS -----------------------------------------------------------------------------------------------
def test_gds_on_a_real_capture(node: NodeExpect) -> None:
    probe = FakeNode({st.NVFS: (0, "live\n"), st.GDSCHECK: (0, real(GDS))})
    st.test_gds(node, probe)


def test_gds_unsupported_filesystem_fails() -> None:
    weka = _node(
        STORAGE.replace("type: nfs", "type: weka")
        .replace("/export/home", "fs1")
        .replace("      transport: rdma\n", "")
    )
    with pytest.raises(CheckFailed, match="WekaFS=Unsupported"):
        st.test_gds(weka, FakeNode({st.NVFS: (0, "live\n"), st.GDSCHECK: (0, real(GDS))}))


def test_gds_without_nvidia_fs_fails_and_without_gdscheck_errors(node: NodeExpect) -> None:
    with pytest.raises(CheckFailed, match="nvidia_fs module"):
        st.test_gds(node, FakeNode({st.NVFS: (0, "absent\n"), st.GDSCHECK: (0, real(GDS))}))
    with pytest.raises(ToolMissing, match=r"gdscheck missing \(install: role storage, tag storage_gds\)"):
        st.test_gds(node, FakeNode({st.NVFS: (0, "live\n")}))


# ---- full tier: fio, checkpoint ------------------------------------------------------------------------
def _fio(node: NodeExpect, target: str, kind: str) -> str:
    return st.fio_cmd(target, st.fio_args(kind, node.desired["storage"]["io_test"], target != "/jfs"))


def test_fio_randread_floors_per_target(node: NodeExpect) -> None:
    """85,139 read IOPS (the real capture): above home's 50,000 floor, under scratch's 100,000."""
    probe = FakeNode(
        {
            _fio(node, "/home", "randread"): (0, real(FIO)),
            _fio(node, "/mnt/test-cache/vol-0", "randread"): (0, real(FIO)),
        }
    )
    with pytest.raises(
        CheckFailed, match=r"found scratch=85138.9, 85138.9, 85138.9 IOPS \(floor >= 100000 IOPS"
    ):
        st.test_fio(node, probe, "randread")
    assert [a.passed for a in probe.attempts] == [False, False, False, True]


def test_fio_missing_is_an_error_not_a_fail(node: NodeExpect) -> None:
    with pytest.raises(CheckError, match=r"fio missing \(install: role storage, tag storage_packages\)"):
        st.test_fio(node, FakeNode({}), "randread")


def test_fio_command_never_runs_outside_a_mount_point(node: NodeExpect, tmp_path: Any) -> None:
    import subprocess

    cmd = _fio(node, str(tmp_path), "randread").replace("fio --version", "true", 1)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=False)
    assert out.returncode == 3 and "not a mount point" in out.stderr and list(tmp_path.iterdir()) == []


def test_checkpoint_write(node: NodeExpect) -> None:
    """0.348 GB/s written (the capture's write side) against home's 0.3 GB/s floor."""
    io = node.desired["storage"]["io_test"]
    cmd = st.fio_cmd("/home", st.checkpoint_args(io))
    st.test_checkpoint(node, FakeNode({cmd: (0, real(FIO))}))
    assert "--end_fsync=1" in cmd and "--size=8192m" in cmd
    strict = _node(STORAGE.replace("checkpoint_write_gbs: 0.3", "checkpoint_write_gbs: 1"))
    with pytest.raises(
        CheckFailed, match=r"checkpoint write: .*found home=0.3, 0.3, 0.3 GB/s \(floor >= 1 GB/s"
    ):
        st.test_checkpoint(strict, FakeNode({cmd: (0, real(FIO))}))


def test_fio_job_error_is_an_error(node: NodeExpect) -> None:
    doc = json.loads(real(FIO))
    doc["jobs"][0]["error"] = 5
    cmd = st.fio_cmd("/home", st.checkpoint_args(node.desired["storage"]["io_test"]))
    with pytest.raises(CheckError, match="fio job errors"):
        st.test_checkpoint(node, FakeNode({cmd: (0, json.dumps(doc))}))


def test_prefetch_reads_only_what_the_node_declares(node: NodeExpect) -> None:
    cmds = st.commands(node)
    assert st.FINDMNT in cmds and st.NVFS in cmds and st.lsblk_cmd(["/dev/nvme3n1p1"]) in cmds
    assert st.realpath_cmd(["/dev/nvme3n1p1"]) in cmds
    assert st.LNET not in cmds  # no Lustre mount
    assert st.nic_cmds("stor1")[2] in cmds  # home (NFS) goes over the storage NICs
    assert st.commands(_node("")) == []  # a spec without storage


def test_no_storage_section_no_storage_check(node: NodeExpect) -> None:
    bare = _node("")
    marks = {
        name: getattr(st, name).pytestmark
        for name in (
            "test_mounts",
            "test_writable",
            "test_scratch",
            "test_gds",
            "test_fio",
            "test_checkpoint",
        )
    }
    for name, pm in marks.items():
        applies = next(m for m in pm if m.name == "applies").args[0]
        assert applies(node), name
        assert not applies(bare), name


@pytest.mark.parametrize(
    "value",
    ["$(touch canary)", "`touch canary`", "a;touch canary", "q'uo\"te", "sp ace", "*", "-x --evil", "~root"],
)
def test_storage_commands_keep_values_literal(node: NodeExpect, tmp_path: Any, value: str) -> None:
    """A mount point reaches fio, mountpoint, mktemp and rm as one literal argument (stand-ins log argv)."""
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv.log"
    for tool in ("fio", "mountpoint"):
        (bin_dir / tool).write_text(
            f'#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> {log}; echo >> {log}\n'
        )
        (bin_dir / tool).chmod(0o755)
    made = tmp_path / "made"  # what the mktemp stand-in "creates": fio's own directory
    (bin_dir / "mktemp").write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> {log}; echo >> {log}\n'
        f"mkdir -p {made}; echo {made}\n"
    )
    (bin_dir / "mktemp").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    io = node.desired["storage"]["io_test"]
    for cmd in (st.fio_cmd(value, st.fio_args("randread", io, True)), st.write_cmd(value)):
        subprocess.run(["sh", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, check=False, timeout=30)
        if "fio" in cmd:
            assert not made.exists()  # fio's directory removed with its files
    got = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    assert ["-q", value] in got
    assert ["-d", f"{value}/.cf-fio-XXXXXXXX"] in got  # fio's own directory under the mount point
    assert any(c[-1:] == [f"--directory={made}"] for c in got)
    assert not (tmp_path / "canary").exists()


# ---- lossless storage NICs: the rails' QoS, read as test_rdma reads it (real mlnx_qos capture) -------------
QOS = "mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt"  # trust dscp, PFC on 3 only


def _lossless_node() -> NodeExpect:
    text = without_storage((CLUSTERS / "lab.yaml").read_text(encoding="utf-8")) + STORAGE
    net = "  storage: {speed_gbps: 200, nics_per_node: 2, mtu: 9000}\n"
    assert net in text
    text = text.replace(net, net.replace("9000}", "9000, lossless: true}"))
    return nodes_of(build_plan(load_spec_text(text, "lab.yaml")).doc)["ib-01"]


def _qos_answers(node: NodeExpect, qos: str, ecn: str = "1") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dev in ("stor0", "stor1"):
        out[f"mlnx_qos -i {dev}"] = (0, qos)
        for c in st.roce_qos.ecn_cmds(dev, 3):
            out[c] = (0, ecn + "\n")
    return out


def test_lossless_storage_nic_qos() -> None:
    node = _lossless_node()
    assert node.desired_state["storage"]["nics"]["qos"]["pfc_priorities"] == [3]
    assert node.desired_state["rdma"]["qos_tool"] == "mlnx_qos"
    qos = real(QOS)
    assert "mlnx_qos -i stor0" in st.commands(node)
    st.test_nic_qos(node, FakeNode(_qos_answers(node, qos)))
    with pytest.raises(CheckFailed, match=r"stor0=.*ECN np=0 rp=0.*Fix.*roce_qos"):
        st.test_nic_qos(node, FakeNode(_qos_answers(node, qos, ecn="0")))
    pfc_off = qos.replace("enabled     0   0   0   1", "enabled     0   0   0   0")
    assert pfc_off != qos
    with pytest.raises(CheckFailed, match=r"stor0=trust dscp, PFC on \[\]"):
        st.test_nic_qos(node, FakeNode(_qos_answers(node, pfc_off)))
    missing = _qos_answers(node, qos)
    missing["mlnx_qos -i stor1"] = (127, "")
    with pytest.raises(CheckError):
        st.test_nic_qos(node, FakeNode(missing))


def test_storage_nic_qos_only_when_lossless(node: NodeExpect) -> None:
    assert "qos" not in node.desired_state["storage"]["nics"]
    assert not any(c.startswith("mlnx_qos -i stor") for c in st.commands(node))
