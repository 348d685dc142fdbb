"""The lab node image: a debootstrapped Debian rootfs, cached by a hash of its recipe.

Two cached layers under `~/.cache/clusterforge/images/`:
  base-<base hash>.tar.zst   debootstrap output (slow: ~1-2 min, network)
  <recipe hash>/rootfs       base extracted + customised + simulator installed (seconds); the overlay lower
The base hash covers the suite and package list; the recipe hash adds the customisation version and the
hash of the simulator's files, so editing either never re-runs debootstrap.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from clusterforge.lab import config

log = logging.getLogger(__name__)

SUITE = "bookworm"
VARIANT = "minbase"
BASE_PACKAGES = [
    "openssh-server",
    "python3",
    "iproute2",
    "kmod",
    "procps",
    "systemd",
    "systemd-sysv",
    "dbus",
    "sudo",
    "libpam-systemd",  # provides logind: debootstrap cannot resolve polkitd's `default-logind | logind`
]
# A minimal server install, as a site's installer leaves it (plus ca-certificates, the bootloader's
# update-grub and ping): nothing a role installs. The roles install everything else over the network, from
# the lab's Debian caching proxy (apt-cacher-ng) and vendor repository (docs/lab.md). Keep one package a line.
EXTRA_PACKAGES = [
    "ca-certificates",
    "grub2-common",
    "iputils-ping",
]
# Bump when `_customise` changes what it does to the rootfs.
CUSTOMISE_VERSION = 5
SIM_PACKAGE = "clusterforge.lab.sim"
SIM_INSTALL_MODULES = ("clusterforge.lab.sim.image", "clusterforge.lab.sim.install")  # install(rootfs: Path)

PRUNE_GRACE_S = 1800.0

MASKED_UNITS = [
    "systemd-networkd-wait-online.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "man-db.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "console-getty.service",
    "systemd-journald-audit.socket",
]
# Slurm's PMIx MPI plugin is never unpacked in lab nodes (a dpkg path filter, like a site's image policy):
# it cannot initialise inside the nspawn containers and would keep slurmd from starting.
DPKG_EXCLUDES = ["/usr/lib/*/slurm-wlm/mpi_pmix*"]


def packages() -> list[str]:
    return sorted(set(BASE_PACKAGES) | set(EXTRA_PACKAGES))


def base_hash(pkgs: list[str] | None = None) -> str:
    """Hash of what debootstrap produces (the mirror is left out: a snapshot mirror in practice)."""
    recipe = {"suite": SUITE, "variant": VARIANT, "packages": sorted(pkgs or packages())}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def tree_hash(root: Path | None) -> str:
    """Content hash of a directory's files (paths + bytes), caches and bytecode ignored."""
    h = hashlib.sha256()
    if root is None or not root.is_dir():
        return "none"
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts or p.suffix in (".pyc", ".pyo") or not p.is_file():
            continue
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def sim_dir() -> Path | None:
    d = Path(__file__).resolve().parent / "sim"
    return d if d.is_dir() else None


def recipe_hash(pkgs: list[str] | None = None) -> str:
    key = f"{base_hash(pkgs)}:{CUSTOMISE_VERSION}:{tree_hash(sim_dir())}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _source_uris() -> list[str]:
    """Every repository URI of the host's apt sources (deb822 or one-line)."""
    uris = []
    candidates = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for f in candidates:
        if not f.is_file() or f.suffix not in ("", ".list", ".sources"):
            continue
        text = f.read_text(errors="replace")
        uris += [m.group(1) for m in re.finditer(r"^(?:deb\s+(?:\[[^]]*\]\s+)?|URIs:\s*)(\S+)", text, re.M)]
    return uris


def debian_mirror() -> str:
    """The host's configured Debian mirror, else deb.debian.org."""
    env = os.environ.get("CLUSTERFORGE_DEBIAN_MIRROR")
    if env:
        return env
    for uri in _source_uris():
        if "security" not in uri and re.search(r"/debian/?$", uri):
            return uri
    return "http://deb.debian.org/debian"


def security_mirror() -> str:
    """The host's configured Debian security mirror, else deb.debian.org/debian-security."""
    env = os.environ.get("CLUSTERFORGE_DEBIAN_SECURITY_MIRROR")
    if env:
        return env
    for uri in _source_uris():
        if re.search(r"/debian-security/?$", uri):
            return uri
    return "http://deb.debian.org/debian-security"


def _run(argv: list[str], **kw: object) -> None:
    log.debug("run: %s", " ".join(argv))
    subprocess.run(argv, check=True, **kw)  # type: ignore[call-overload]


def _customise(root: Path) -> None:
    """Make the debootstrap output a lab node image (no per-node identity; that goes in each upper)."""
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # one set would be shared by every node: keys are made per node on the host
    (root / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/ssh/sshd_config.d/clusterforge-lab.conf").write_text(
        "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nUseDNS no\n"
    )
    for name in ("etc/hostname", "etc/munge/munge.key"):
        (root / name).unlink(missing_ok=True)
    (root / "etc/machine-id").write_text("")
    (root / "etc/fstab").write_text("# lab node: no filesystems of its own\n")
    # No route out: the repositories role points apt at the lab's caching proxy and vendor repository.
    (root / "etc/apt/sources.list").write_text("# lab node: no internet; see docs/lab.md\n")
    for f in (root / "etc/apt/sources.list.d").glob("*"):
        f.unlink()
    (root / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/dpkg/dpkg.cfg.d/clusterforge-lab").write_text(
        "# clusterforge lab: files never unpacked in lab nodes (docs/lab.md); no fsync per file (the\n"
        "# node's disk is a throwaway overlay, as in Debian's container images)\n"
        + "".join(f"path-exclude={p}\n" for p in DPKG_EXCLUDES)
        + "force-unsafe-io\n"
    )
    (root / "root/.ssh").mkdir(mode=0o700, exist_ok=True)
    _run(["systemctl", f"--root={root}", "mask", "--quiet", *MASKED_UNITS])
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    for lst in (root / "var/lib/apt/lists").glob("*_*"):
        lst.unlink()


def build_base(dest: Path, mirror: str | None = None) -> Path:
    """debootstrap, packed into `dest` (a .tar.zst). Returns dest."""
    mirror = mirror or debian_mirror()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cf-image-", dir=dest.parent) as tmp:
        root = Path(tmp) / "rootfs"
        log.info("debootstrap %s (%d packages) from %s", SUITE, len(packages()), mirror)
        logfile = dest.with_suffix(".log")
        with open(logfile, "w") as out:
            r = subprocess.run(
                [
                    "debootstrap",
                    f"--variant={VARIANT}",
                    f"--include={','.join(packages())}",
                    SUITE,
                    str(root),
                    mirror,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if r.returncode != 0:
            detail = root / "debootstrap/debootstrap.log"
            tail = detail.read_text(errors="replace")[-3000:] if detail.exists() else ""
            raise RuntimeError(f"debootstrap failed (see {logfile}):\n{tail}")
        for deb in (root / "var/cache/apt/archives").glob("*.deb"):
            deb.unlink()  # debootstrap keeps what it downloaded: not part of the image
        part = dest.with_suffix(".part")
        _run(
            [
                "tar",
                "--numeric-owner",
                "--xattrs",
                "--xattrs-include=*",
                "-C",
                str(root),
                "-I",
                "zstd -T0 -3",
                "-cf",
                str(part),
                ".",
            ]
        )
        part.rename(dest)
    return dest


def _install_sim(root: Path) -> None:
    """Let the simulator install itself into the rootfs (`install(rootfs: Path) -> None`, run as root)."""
    for name in SIM_INSTALL_MODULES:
        mod = importlib.import_module(name)
        if hasattr(mod, "install"):
            log.info("installing the simulator (%s.install)", name)
            mod.install(root)
            return
    raise RuntimeError(f"no simulator installer in {' / '.join(SIM_INSTALL_MODULES)}")


@contextlib.contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """One builder/pruner at a time per cache (several labs and test runs share it)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_image(cache: Path | None = None) -> Path:
    """The shared, read-only lower rootfs for the current recipe, building what is missing."""
    cache = cache or config.IMAGE_CACHE
    rootdir = cache / recipe_hash()
    rootfs = rootdir / "rootfs"
    if (rootdir / "ready").exists():
        (rootdir / "ready").touch()  # recently used: kept by prune() of other recipes
        return rootfs
    with _cache_lock(cache):
        if (rootdir / "ready").exists():
            return rootfs
        base = cache / f"base-{base_hash()}.tar.zst"
        if not base.exists():
            build_base(base)
        shutil.rmtree(rootdir, ignore_errors=True)
        rootfs.mkdir(parents=True)
        t0 = time.monotonic()
        _run(
            [
                "tar",
                "--numeric-owner",
                "--xattrs",
                "--xattrs-include=*",
                "-C",
                str(rootfs),
                "-I",
                "zstd -T0",
                "-xf",
                str(base),
            ]
        )
        t1 = time.monotonic()
        _customise(rootfs)
        _install_sim(rootfs)
        (rootdir / "recipe.json").write_text(
            json.dumps({"base": base.name, "packages": packages(), "sim": tree_hash(sim_dir())}, indent=1)
        )
        (rootdir / "ready").write_text("")
        log.info(
            "image %s: extracted in %.1f s, customised + simulator in %.1f s",
            rootdir.name,
            t1 - t0,
            time.monotonic() - t1,
        )
        for old in prune({rootfs}, cache):
            log.info("removed unused image %s", old.name)
    return rootfs


def lowers_in_use() -> set[Path]:
    """Lower rootfs of nodes whose supervisor is alive (any cluster): never removed under a running node."""
    from clusterforge.lab import procs  # here: image must stay importable without the runtime modules

    used = set()
    for cfg in config.STATE_BASE.glob("*/nodes/*/supervisor.json"):
        if procs.live_pid(cfg.with_name("supervisor.pid")) is not None:
            try:
                used.add(Path(json.loads(cfg.read_text())["lower"]))
            except (OSError, ValueError, KeyError):
                continue
    return used


def prune(keep: set[Path], cache: Path | None = None, grace_s: float = PRUNE_GRACE_S) -> list[Path]:
    """Remove cached lower rootfs other than `keep`, those in use and those used in the last `grace_s`
    (another process may be about to boot them); base tarballs stay."""
    cache = cache or config.IMAGE_CACHE
    keep = keep | lowers_in_use()
    gone = []
    now = time.time()
    for d in cache.glob("*/rootfs"):
        ready = d.parent / "ready"
        recent = ready.exists() and now - ready.stat().st_mtime < grace_s
        building = not ready.exists() and now - d.parent.stat().st_mtime < grace_s
        if d not in keep and not recent and not building:
            shutil.rmtree(d.parent, ignore_errors=True)
            gone.append(d.parent)
    return gone
