"""The simulated NVIDIA apt repository and the image install (no lab needed; dpkg tools from the host)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.lab.sim import image, paths, pkghook, repo

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


def _status(*installed: str, removed: tuple[str, ...] = ()) -> str:
    rows = [f"Package: {p}\nStatus: install ok installed\nVersion: 1\n" for p in installed]
    rows += [f"Package: {p}\nStatus: deinstall ok config-files\nVersion: 1\n" for p in removed]
    return "\n".join(rows)


def _fake_rootfs(root: Path) -> None:
    """Just enough of a Debian rootfs: the dpkg database of the packages whose tools are diverted."""
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(_status("util-linux", "iproute2"))
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
    # not installed yet: diverted ahead, but no tool (vendor tools come from the lab repository's packages)
    assert not (root / "usr/sbin/ibstat").exists() and not (root / "usr/sbin/ibstat").is_symlink()
    assert not (root / "usr/bin/ib_write_bw").is_symlink() and not (root / "usr/bin/mlnx_qos").exists()
    assert "pkg-sync" in (root / pkghook.HOOK_PATH.lstrip("/")).read_text()
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


def test_apt_hook_links_a_tool_only_while_its_package_is_installed(tmp_path: Path) -> None:
    root = tmp_path / "rootfs"
    _fake_rootfs(root)
    image.install_into_rootfs(root)
    status = root / "var/lib/dpkg/status"
    status.write_text(_status("util-linux", "iproute2", "infiniband-diags", "perftest"))
    changes = pkghook.sync(root)
    assert "+/usr/sbin/ibstat" in changes and "+/usr/bin/ib_write_bw" in changes
    assert "+/usr/bin/ibv_devinfo" not in changes  # ibverbs-utils not installed
    assert (root / "usr/sbin/ibstat").is_symlink()
    assert str((root / "usr/sbin/ibstat").readlink()) == paths.ENTRY
    assert pkghook.sync(root) == []  # idempotent
    status.write_text(_status("util-linux", "iproute2", "perftest", removed=("infiniband-diags",)))
    assert pkghook.sync(root) == ["-/usr/sbin/ibstat", "-/usr/sbin/ibstatus", "-/usr/sbin/smpquery"]
    assert not (root / "usr/sbin/ibstat").is_symlink()
    assert (root / "usr/bin/ib_write_bw").is_symlink()


def test_apt_hook_never_replaces_a_real_file(tmp_path: Path) -> None:
    root = tmp_path / "rootfs"
    _fake_rootfs(root)
    (root / "var/lib/dpkg/status").write_text(_status("infiniband-diags"))
    (root / "usr/sbin").mkdir(parents=True)
    (root / "usr/sbin/ibstat").write_text("real, not diverted\n")
    assert "+/usr/sbin/ibstat" not in pkghook.sync(root)
    assert (root / "usr/sbin/ibstat").read_text() == "real, not diverted\n"


def test_installed_packages_reads_dpkg_status() -> None:
    text = (
        "Package: rdma-core\nStatus: install ok installed\nDescription: x\n continued: line\n\n"
        "Package: perftest\nStatus: deinstall ok config-files\n\n"
        "Package: libc6:amd64\nStatus: install ok installed\n\n"
        "Package: mft\nStatus: install ok half-configured\n"
    )
    assert pkghook.installed_packages(text) == {"rdma-core", "libc6"}


def test_doca_ofed_profile_packages(tmp_path: Path) -> None:
    pkgs = {(d.name, d.version): d for d in repo.doca_packages()}
    doca = pkgs[("doca-ofed", "2.10.0-1")]
    assert {"rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"} <= set(doca.depends)
    assert "mlnx-tools (= 25.01-0.6.0-1)" in doca.depends and any(
        d.startswith("mft (=") for d in doca.depends
    )
    tools = pkgs[("mlnx-tools", "25.01-0.6.0-1")].links
    assert set(tools) == {"/usr/bin/mlnx_qos", "/usr/sbin/show_gids", "/usr/bin/ibdev2netdev"}
    deb = repo.build_deb(pkgs[("ofed-scripts", "25.01-0.6.0-1")], tmp_path)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    r = subprocess.run([str(tmp_path / "x/usr/bin/ofed_info"), "-s"], capture_output=True, text=True)
    assert r.stdout == "OFED-internal-25.01-0.6.0:\n"  # the DOCA-era `ofed_info -s` line (fixtures/real)
