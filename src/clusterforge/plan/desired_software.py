"""The software part of a node's compiled desired state: the pins certification reads, and the vendor
packages the roles install at those pins, per OS family, with their exact version patterns.

Computed once, here, from the plan's `software` pins and the SKU. The roles install what
`packages[<ansible_os_family>]` lists (nvidia_gpu: driver, fabric manager, DCGM; nccl: NCCL) and hold it;
the validators read the pins and these package entries; the drift compares the installed versions with
them. Neither side builds a package name or a version string again.

Package names and version forms (the sources the roles were written from):
* Debian family, NVIDIA's CUDA repository: ``nvidia-driver-<branch>``, ``nvidia-fabricmanager-<branch>``,
  ``libnvidia-nscq-<branch>`` at the driver version; DCGM 4 as ``datacenter-gpu-manager-4-core`` +
  ``-cuda<major>`` with epoch 1 (``1:4.2.3-1``); NCCL as ``libnccl2`` at ``<nccl>-1+cuda<cuda>``
  (NVIDIA's NCCL install guide: ``libnccl2=2.x.y-1+cudaX.Y``).
* Red Hat family: the driver from the dnf module stream as ``nvidia-driver``, ``-cuda``, ``-libs`` and
  ``kmod-nvidia-latest-dkms`` with epoch 3, ``nvidia-fabric-manager``; NCCL as ``libnccl``.
A version is matched as the roles' package filters match it (clusterforge.node: apt's ``<epoch:>version*``
glob; dnf's version, or version-release when the pin carries a release) and as
`clusterforge.hw.pkgversion.matches_package` does for the validators.
"""

from __future__ import annotations

from typing import Any

FAMILIES = ("Debian", "RedHat")

# (label, family) -> the package names, `{branch}` / `{cuda_major}` filled in from the pins
_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("driver", "Debian"): ("nvidia-driver-{branch}",),
    ("driver", "RedHat"): (
        "nvidia-driver",
        "nvidia-driver-cuda",
        "nvidia-driver-libs",
        "kmod-nvidia-latest-dkms",
    ),
    ("fabricmanager", "Debian"): ("nvidia-fabricmanager-{branch}", "libnvidia-nscq-{branch}"),
    ("fabricmanager", "RedHat"): ("nvidia-fabric-manager", "libnvidia-nscq-{branch}"),
    ("dcgm", "Debian"): ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda{cuda_major}"),
    ("dcgm", "RedHat"): ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda{cuda_major}"),
    ("nccl", "Debian"): ("libnccl2",),
    ("nccl", "RedHat"): ("libnccl",),
}
_EPOCH: dict[tuple[str, str], str] = {
    ("driver", "RedHat"): "3",
    ("dcgm", "Debian"): "1",
    ("dcgm", "RedHat"): "1",
}


def _group(label: str, family: str, version: str, fill: dict[str, str]) -> dict[str, Any]:
    return {
        "label": label,
        "packages": [n.format(**fill) for n in _NAMES[(label, family)]],
        "version": version,
        "epoch": _EPOCH.get((label, family), ""),
        "hold": True,
    }


def packages(software: dict[str, Any], nvswitch: bool) -> dict[str, list[dict[str, Any]]]:
    """Per OS family, the pinned package groups in install order: the driver, the fabric manager (a SKU
    with NVSwitches), DCGM, NCCL. Each: label, packages, version, epoch, hold."""
    drv = software["nvidia_driver"]
    cuda = str(software["cuda"])
    fill = {"branch": str(drv["branch"]), "cuda_major": cuda.split(".")[0]}
    versions = {
        "driver": str(drv["version"]),
        "fabricmanager": str(drv["version"]),
        "dcgm": str(software["dcgm"]),
        "nccl": f"{software['nccl']}-1+cuda{cuda}",
    }
    labels = ["driver", *(["fabricmanager"] if nvswitch else []), "dcgm", "nccl"]
    return {fam: [_group(label, fam, versions[label], fill) for label in labels] for fam in FAMILIES}


def _opt(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


#: the benchmark tools' package names where the spec names none (the names the lab's vendor repository
#: serves them under, and the project names of NVIDIA/nccl-tests and NVIDIA/nvbandwidth)
BENCHMARK_PACKAGES = {"nccl_tests": "nccl-tests", "nvbandwidth": "nvbandwidth"}


def benchmark(tool: str, pin: dict[str, Any]) -> dict[str, Any]:
    """One benchmark tool's pin as the benchmarks role installs it and the validators check it: version,
    install method, the package name (package installs: the spec's, else the default), artifact URL and
    sha256 (None where not given)."""
    install = str(pin.get("install") or "package")
    return {
        "version": str(pin["version"]),
        "install": install,
        "package": str(pin.get("package") or BENCHMARK_PACKAGES[tool]) if install == "package" else None,
        "url": _opt(pin.get("url")),
        "sha256": _opt(pin.get("sha256")),
    }


def software_desired(software: dict[str, Any] | None, sku: dict[str, Any]) -> dict[str, Any]:
    """The pins (driver, CUDA, NCCL, DCGM, firmware, BIOS, benchmark tools) and the pinned packages; an
    empty section when the plan has no software pins (a SKU-only desired state in tests)."""
    if not software:
        return {}
    return {
        "nvidia_driver": {
            "branch": str(software["nvidia_driver"]["branch"]),
            "version": str(software["nvidia_driver"]["version"]),
        },
        "cuda": str(software["cuda"]),
        "nccl": str(software["nccl"]),
        "dcgm": str(software["dcgm"]),
        "nic_firmware": _opt(software.get("nic_firmware")),
        "vbios": _opt(software.get("vbios")),
        "bios": _opt(software.get("bios")),
        "benchmarks": {
            tool: benchmark(tool, software[tool])
            for tool in BENCHMARK_PACKAGES
            if isinstance(software.get(tool), dict)
        },
        "packages": packages(software, bool(sku.get("gpu", {}).get("nvswitch"))),
    }
