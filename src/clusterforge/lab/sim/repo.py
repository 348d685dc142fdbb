"""Simulated NVIDIA packages (real package names, several versions) and their apt repository.

``build_repo(dest)`` writes ``dest/pool/main/*.deb`` (built with ``dpkg-deb --build``) and
``dest/dists/stable/{Release,InRelease,Release.gpg}`` + ``main/binary-amd64/Packages{,.gz}``; the lab serves
``dest`` at http://10.244.0.1:8780/nvidia. The Release file is signed with a throwaway key whose public half
is ``dest/clusterforge-lab-archive-keyring.gpg`` (unsigned when gpg is missing: use ``[trusted=yes]``).
The packages' programs are symlinks to the simulator's multi-call entry, so a node without the driver
package has no ``nvidia-smi`` at all, exactly like a real node before provisioning.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import paths, repo_exporter, units

DRIVERS = [("550", "550.163.01", "12.4"), ("570", "570.133.20", "12.8"), ("570", "570.148.08", "12.8")]
DCGM_VERSIONS = ["4.2.3", "4.4.1"]
NCCL_VERSIONS = [("2.21.5", "12.4"), ("2.26.2", "12.8")]
# The benchmark tools under the names a site repository gives them (NVIDIA publishes no .deb of either);
# the spec's default pins (software.nccl_tests / software.nvbandwidth) are among these versions.
NCCL_TESTS_VERSIONS = ["2.14.1"]
NVBANDWIDTH_VERSIONS = ["0.8"]
NCCL_TESTS = [
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "broadcast_perf",
    "reduce_perf",
    "sendrecv_perf",
]


def doca_versions() -> list[tuple[str, str, str]]:
    """(DOCA-Host release, the DOCA-OFED version `ofed_info -s` reports as "OFED-internal-<ver>:", MFT
    version) from the product's table (clusterforge.spec.doca; imported here, on the host that builds the
    repository: the node's copy of the simulator never builds it)."""
    from clusterforge.spec.doca import releases

    return [(r.doca, r.ofed, r.mft) for r in releases().values()]


KEYRING = "clusterforge-lab-archive-keyring.gpg"
MAINTAINER = "clusterforge lab simulator <lab@clusterforge.invalid>"


@dataclass
class Deb:
    name: str
    version: str
    description: str
    depends: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)  # Provides, Conflicts, Replaces ...
    links: dict[str, str] = field(default_factory=dict)  # path -> symlink target
    files: dict[str, str] = field(default_factory=dict)  # path -> content
    scripts: dict[str, str] = field(default_factory=dict)  # postinst, prerm ...
    arch: str = "amd64"

    @property
    def filename(self) -> str:
        return f"{self.name}_{self.version.split(':')[-1]}_{self.arch}.deb"


def _marker(name: str, **info: object) -> dict[str, str]:
    return {f"{paths.PKG_MARKERS}/{name}.json": json.dumps(info, sort_keys=True) + "\n"}


def packages() -> list[Deb]:
    debs: list[Deb] = []
    for branch, ver, cuda in DRIVERS:
        pv = f"{ver}-1"
        for flavour in ("", "-open"):
            name = f"nvidia-driver-{branch}{flavour}"
            debs.append(
                Deb(
                    name,
                    pv,
                    f"NVIDIA driver metapackage ({'open' if flavour else 'proprietary'} kernel modules), "
                    "simulated by the clusterforge lab: nvidia-smi, nvidia-persistenced, nvidia-modprobe, "
                    "kernel modules",
                    depends=["python3"],
                    extra={
                        "Provides": "nvidia-driver-binary, nvidia-smi, nvidia-persistenced, nvidia-modprobe",
                        "Conflicts": "nvidia-driver-binary",
                        "Replaces": "nvidia-driver-binary",
                    },
                    links={
                        f"/usr/bin/{t}": paths.ENTRY
                        for t in ("nvidia-smi", "nvidia-persistenced", "nvidia-modprobe")
                    },
                    files={
                        "/lib/systemd/system/nvidia-persistenced.service": units.PERSISTENCED_UNIT,
                        f"/usr/src/nvidia-{ver}/dkms.conf": (
                            f'PACKAGE_NAME="nvidia"\nPACKAGE_VERSION="{ver}"\n'
                            'BUILT_MODULE_NAME[0]="nvidia"\nAUTOINSTALL="yes"\n'
                        ),
                        **_marker(
                            "nvidia-driver",
                            version=ver,
                            branch=branch,
                            cuda=cuda,
                            open=bool(flavour),
                            package=name,
                        ),
                    },
                    scripts={
                        "postinst": units.DRIVER_POSTINST.replace("@VERSION@", ver),
                        "prerm": units.DRIVER_PRERM,
                    },
                )
            )
        driver_dep = f"nvidia-driver-{branch} (= {pv}) | nvidia-driver-{branch}-open (= {pv})"
        debs.append(
            Deb(
                f"nvidia-fabricmanager-{branch}",
                pv,
                "NVIDIA Fabric Manager (NVSwitch systems), simulated by the clusterforge lab; "
                "version-locked to the driver",
                depends=[driver_dep],
                links={"/usr/bin/nv-fabricmanager": paths.ENTRY},
                files={
                    "/lib/systemd/system/nvidia-fabricmanager.service": units.FABRICMANAGER_UNIT,
                    "/usr/share/nvidia/nvswitch/fabricmanager.cfg": units.FABRICMANAGER_CFG,
                    **_marker("nvidia-fabricmanager", version=ver, branch=branch),
                },
                scripts={
                    "postinst": units.SERVICE_POSTINST,
                    "prerm": units.SERVICE_PRERM.replace("@UNIT@", "nvidia-fabricmanager.service"),
                },
            )
        )
        debs.append(
            Deb(
                f"libnvidia-nscq-{branch}",
                pv,
                "NVSwitch Configuration and Query library (simulated)",
                depends=[driver_dep],
                files={
                    f"/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.{ver}": "clusterforge simulated library\n",
                    **_marker("libnvidia-nscq", version=ver, branch=branch),
                },
            )
        )
    for v in DCGM_VERSIONS:
        dv = f"1:{v}-1"
        debs.append(
            Deb(
                "datacenter-gpu-manager-4-core",
                dv,
                "NVIDIA DCGM 4 core: dcgmi, nv-hostengine (simulated)",
                depends=["python3"],
                links={"/usr/bin/dcgmi": paths.ENTRY, "/usr/bin/nv-hostengine": paths.ENTRY},
                files={
                    "/lib/systemd/system/nvidia-dcgm.service": units.DCGM_UNIT,
                    **_marker("datacenter-gpu-manager", version=v),
                },
                scripts={
                    "postinst": units.SERVICE_POSTINST,
                    "prerm": units.SERVICE_PRERM.replace("@UNIT@", "nvidia-dcgm.service"),
                },
            )
        )
        debs.append(
            Deb(
                "datacenter-gpu-manager-4-cuda12",
                dv,
                "NVIDIA DCGM 4 CUDA 12 diagnostics plugins (simulated)",
                depends=[f"datacenter-gpu-manager-4-core (= {dv})"],
                files={"/usr/libexec/datacenter-gpu-manager-4/plugins/cuda12/README": "simulated plugins\n"},
            )
        )
    for v, cuda in NCCL_VERSIONS:
        debs.append(
            Deb(
                "libnccl2",
                f"{v}-1+cuda{cuda}",
                "NVIDIA Collective Communication Library (simulated)",
                files=_marker("libnccl2", version=v, cuda=cuda),
            )
        )
    debs += doca_packages()
    debs += repo_exporter.packages()
    for v in NCCL_TESTS_VERSIONS:
        debs.append(
            Deb(
                "nccl-tests",
                f"{v}-1",
                f"NVIDIA nccl-tests {v} performance tests (simulated by the clusterforge lab; a site builds "
                "this package from the upstream release, NVIDIA/nccl-tests)",
                depends=["libnccl2"],
                links={f"/usr/bin/{t}": paths.ENTRY for t in NCCL_TESTS},
                files=_marker("nccl-tests", version=v),
            )
        )
    for v in NVBANDWIDTH_VERSIONS:
        debs.append(
            Deb(
                "nvbandwidth",
                f"{v}-1",
                f"NVIDIA nvbandwidth v{v} (simulated by the clusterforge lab; a site builds this package "
                "from the upstream release, NVIDIA/nvbandwidth)",
                links={"/usr/bin/nvbandwidth": paths.ENTRY},
                files=_marker("nvbandwidth", version=f"v{v}"),
            )
        )
    return debs


OFED_INFO = """#!/bin/sh
# ofed_info (simulated by the clusterforge lab): the installed DOCA-OFED version.
case "$1" in
  -s) echo "OFED-internal-@OFED@:" ;;
  -n) echo "@OFED@" ;;
  *) printf 'OFED-internal-@OFED@ (DOCA-Host @DOCA@, simulated by the clusterforge lab):\\n' ;;
esac
"""


def doca_packages() -> list[Deb]:
    """The DOCA-OFED profile under its real package names: `doca-ofed` (the profile metapackage) depends on
    the userspace set (rdma-core, ibverbs-utils, infiniband-diags, perftest: Debian's builds here, NVIDIA's
    own builds in the real DOCA repository), `mlnx-tools` (mlnx_qos, show_gids, ibdev2netdev), `mft`
    (mlxconfig, mlxfwmanager) and `ofed-scripts` (ofed_info). The tools are the simulator's; no kernel
    modules."""
    debs: list[Deb] = []
    for doca, ofed, mft in doca_versions():
        v = f"{ofed}-1"
        debs.append(
            Deb(
                "mlnx-tools",
                v,
                "Mellanox userland tools (mlnx_qos, show_gids, ibdev2netdev), simulated by clusterforge",
                depends=["python3"],
                links={
                    "/usr/bin/mlnx_qos": paths.ENTRY,
                    "/usr/sbin/show_gids": paths.ENTRY,
                    "/usr/bin/ibdev2netdev": paths.ENTRY,
                },
                files=_marker("mlnx-tools", version=ofed),
            )
        )
        debs.append(
            Deb(
                "mft",
                f"{mft}",
                "NVIDIA Firmware Tools (mlxconfig, mlxfwmanager --query), simulated by the clusterforge lab",
                links={"/usr/bin/mlxconfig": paths.ENTRY, "/usr/bin/mlxfwmanager": paths.ENTRY},
                files=_marker("mft", version=mft),
            )
        )
        debs.append(
            Deb(
                "ofed-scripts",
                v,
                "DOCA-OFED scripts (ofed_info), simulated by the clusterforge lab",
                files={
                    "/usr/bin/ofed_info": OFED_INFO.replace("@OFED@", ofed).replace("@DOCA@", doca),
                    **_marker("ofed-scripts", version=ofed, doca=doca),
                },
            )
        )
        debs.append(
            Deb(
                "doca-ofed",
                f"{doca}-1",
                f"DOCA-Host doca-ofed profile {doca} (DOCA-OFED {ofed}), simulated by the clusterforge lab",
                depends=[
                    "rdma-core",
                    "ibverbs-utils",
                    "infiniband-diags",
                    "perftest",
                    f"mlnx-tools (= {v})",
                    f"mft (= {mft})",
                    f"ofed-scripts (= {v})",
                ],
                files=_marker("doca-ofed", version=doca, ofed=ofed),
            )
        )
    return debs


def _control(d: Deb) -> str:
    lines = [
        f"Package: {d.name}",
        f"Version: {d.version}",
        f"Architecture: {d.arch}",
        f"Maintainer: {MAINTAINER}",
        "Section: non-free/libs",
        "Priority: optional",
    ]
    if d.depends:
        lines.append(f"Depends: {', '.join(d.depends)}")
    lines += [f"{k}: {v}" for k, v in d.extra.items()]
    lines.append(f"Description: {d.description}")
    return "\n".join(lines) + "\n"


def build_deb(d: Deb, outdir: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="cf-deb-") as tmp:
        root = Path(tmp) / "pkg"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN/control").write_text(_control(d))
        for name, text in d.scripts.items():
            (root / "DEBIAN" / name).write_text(text)
            (root / "DEBIAN" / name).chmod(0o755)
        for path, text in d.files.items():
            f = root / path.lstrip("/")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
            f.chmod(0o755 if text.startswith("#!") else 0o644)
        for path, target in d.links.items():
            f = root / path.lstrip("/")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.symlink_to(target)
        out = outdir / d.filename
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(out)],
            check=True,
            capture_output=True,
        )
        return out


def _stanza(d: Deb, deb: Path, rel: str) -> str:
    data = deb.read_bytes()
    return (
        _control(d).rstrip("\n").replace(f"Description: {d.description}", "")
        + f"Filename: {rel}\nSize: {len(data)}\nMD5sum: {hashlib.md5(data).hexdigest()}\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\nDescription: {d.description}\n"
    )


def _release(dist: Path) -> str:
    files = [p for p in sorted(dist.rglob("Packages*"))]
    head = [
        "Origin: clusterforge-lab",
        "Label: clusterforge lab NVIDIA (simulated)",
        "Suite: stable",
        "Codename: stable",
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S UTC', time.gmtime())}",
        "Architectures: amd64 all",
        "Components: main",
        "Description: simulated NVIDIA packages for the lab",
    ]
    for algo, fn in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        head.append(f"{algo}:")
        for p in files:
            data = p.read_bytes()
            head.append(f" {fn(data).hexdigest()} {len(data):>8} {p.relative_to(dist)}")
    return "\n".join(head) + "\n"


def _sign(dist: Path, dest: Path) -> bool:
    if not shutil.which("gpg"):
        return False
    with tempfile.TemporaryDirectory(prefix="cf-gpg-") as home:
        env = {**os.environ, "GNUPGHOME": home}
        gpg = ["gpg", "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""]
        r = subprocess.run(
            [
                *gpg,
                "--quick-gen-key",
                "clusterforge lab repository <lab@clusterforge.invalid>",
                "ed25519",
                "sign",
                "never",
            ],
            env=env,
            capture_output=True,
        )
        if r.returncode != 0:
            return False
        subprocess.run([*gpg, "--yes", "--output", str(dest / KEYRING), "--export"], env=env, check=True)
        release = dist / "Release"
        subprocess.run(
            [*gpg, "--yes", "--clearsign", "--output", str(dist / "InRelease"), str(release)],
            env=env,
            check=True,
        )
        subprocess.run(
            [*gpg, "--yes", "--armor", "--detach-sign", "--output", str(dist / "Release.gpg"), str(release)],
            env=env,
            check=True,
        )
    return True


def build_repo(dest: Path) -> Path:
    """Build every simulated package and the index into ``dest``; returns ``dest``."""
    dest = Path(dest)
    pool = dest / "pool/main"
    dist = dest / "dists/stable"
    for d in (pool, dist):
        shutil.rmtree(d, ignore_errors=True)
    pool.mkdir(parents=True)
    bin_dir = dist / "main/binary-amd64"
    bin_dir.mkdir(parents=True)
    stanzas = []
    for pkg in packages():
        deb = build_deb(pkg, pool)
        stanzas.append(_stanza(pkg, deb, f"pool/main/{deb.name}"))
    text = "\n".join(stanzas)
    (bin_dir / "Packages").write_text(text)
    with gzip.open(bin_dir / "Packages.gz", "wt") as f:
        f.write(text)
    (dist / "Release").write_text(_release(dist))
    (dest / KEYRING).unlink(missing_ok=True)
    _sign(dist, dest)
    return dest
