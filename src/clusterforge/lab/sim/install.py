"""The hook the lab's image builder imports (``clusterforge.lab.image.SIM_INSTALL_MODULE``)."""

from __future__ import annotations

from pathlib import Path

from .image import install_into_rootfs


def install(rootfs: Path) -> None:
    install_into_rootfs(rootfs)
