"""The simulated NVIDIA apt repository and the image install (no lab needed; dpkg tools from the host)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.lab.sim import image, repo

pytestmark = pytest.mark.skipif(
    not shutil.which("dpkg-deb") or not shutil.which("dpkg-divert"), reason="needs dpkg-deb and dpkg-divert"
)


def _stanzas(text: str) -> list[dict[str, str]]:
    out = []
    for block in text.strip().split("\n\n"):
        out.append(dict(line.split(": ", 1) for line in block.splitlines() if ": " in line))
    return out


def test_build_repo(tmp_path: Path) -> None:
    dest = repo.build_repo(tmp_path / "nvidia")
    index = dest / "dists/stable/main/binary-amd64/Packages"
    pkgs = _stanzas(index.read_text())
    assert gzip.decompress((index.parent / "Packages.gz").read_bytes()).decode() == index.read_text()
    versions: dict[str, set[str]] = {}
    for p in pkgs:
        versions.setdefault(p["Package"], set()).add(p["Version"])
        assert (dest / p["Filename"]).is_file()
    assert versions["nvidia-driver-570"] == {"570.133.20-1", "570.148.08-1"}
    assert versions["nvidia-driver-550"] == {"550.163.01-1"}
    assert "datacenter-gpu-manager-4-cuda12" in versions and "libnvidia-nscq-570" in versions
    # the benchmark tools under the names a site repository gives them (the benchmarks role installs them)
    assert versions["nccl-tests"] == {"2.14.1-1"} and versions["nvbandwidth"] == {"0.8-1"}
    assert not [name for name in versions if name.startswith("clusterforge-sim")]
    fm = next(
        p for p in pkgs if p["Package"] == "nvidia-fabricmanager-570" and p["Version"] == "570.133.20-1"
    )
    assert "nvidia-driver-570 (= 570.133.20-1)" in fm["Depends"]  # version-locked to the driver
    release = (dest / "dists/stable/Release").read_text()
    assert "Suite: stable" in release and "main/binary-amd64/Packages" in release
    if shutil.which("gpg"):
        assert (dest / "dists/stable/InRelease").is_file() and (dest / repo.KEYRING).is_file()
    deb = dest / "pool/main/nvidia-driver-570_570.133.20-1_amd64.deb"
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/nvidia-smi -> /usr/lib/clusterforge-sim/clusterforge-sim" in listing
    assert "nvidia-persistenced.service" in listing
    scripts = subprocess.run(
        ["dpkg-deb", "-I", str(deb), "postinst"], capture_output=True, text=True, check=True
    ).stdout
    assert "updates/dkms" in scripts


def _fake_rootfs(root: Path) -> None:
    """Just enough of a Debian rootfs: the dpkg database of the packages whose tools are diverted."""
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("")
    (root / "var/lib/dpkg/diversions").write_text("")
    (info / "util-linux.list").write_text("/.\n/bin\n/bin/dmesg\n")
    (info / "iproute2.list").write_text("/.\n/usr/bin\n/usr/bin/rdma\n")
    for f in ("bin/dmesg", "usr/bin/rdma"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("real\n")
    (root / "etc/systemd/system").mkdir(parents=True)


def test_install_into_rootfs(tmp_path: Path) -> None:
    root = tmp_path / "rootfs"
    _fake_rootfs(root)
    image.install_into_rootfs(root)
    image.install_into_rootfs(root)  # idempotent
    entry = root / "usr/lib/clusterforge-sim/clusterforge-sim"
    assert entry.read_text().startswith("#!/usr/bin/python3 -I")
    assert (root / "usr/lib/clusterforge-sim/clusterforge/lab/sim/main.py").is_file()
    assert not (root / "usr/lib/clusterforge-sim/clusterforge/lab/sim/cli.py").exists()
    assert (root / "bin/dmesg").is_symlink() and (root / "bin/dmesg.distrib").read_text() == "real\n"
    assert (root / "usr/bin/rdma.distrib").read_text() == "real\n"
    assert (root / "usr/sbin/ibstat").is_symlink() and (root / "usr/bin/mlnx_qos").is_symlink()
    assert (root / "usr/local/sbin/modprobe").is_symlink()
    div = subprocess.run(["dpkg-divert", f"--root={root}", "--list"], capture_output=True, text=True).stdout
    assert "diversion of /bin/dmesg to /bin/dmesg.distrib by clusterforge-sim" in div
    assert "diversion of /usr/bin/ib_write_bw to /usr/bin/ib_write_bw.distrib by clusterforge-sim" in div
    assert div.count("by clusterforge-sim") == len(image.DIVERTED)
    wants = root / "etc/systemd/system/sysinit.target.wants/clusterforge-sim-boot.service"
    assert wants.is_symlink()
    assert "GRUB_CMDLINE_LINUX_DEFAULT" in (root / "etc/default/grub").read_text()
    r = subprocess.run([str(root / "usr/local/bin/mkdir"), "-p", str(tmp_path / "x/y")], capture_output=True)
    assert r.returncode == 0 and (tmp_path / "x/y").is_dir()
