"""Recipe hashing: what makes the cached image rebuild (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.lab import image


def test_base_hash_is_stable_and_order_free() -> None:
    pkgs = image.packages()
    assert image.base_hash(pkgs) == image.base_hash(list(reversed(pkgs)))
    assert image.base_hash(pkgs) != image.base_hash([*pkgs, "htop"])


def test_packages_include_what_nodes_need_offline() -> None:
    pkgs = set(image.packages())
    assert {"openssh-server", "systemd", "slurmd", "munge", "rdma-core", "tuned", "grub2-common"} <= pkgs


def test_tree_hash_follows_content_not_bytecode(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    h1 = image.tree_hash(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    assert image.tree_hash(tmp_path) == h1
    (tmp_path / "a.py").write_text("x = 2\n")
    assert image.tree_hash(tmp_path) != h1
    assert image.tree_hash(None) == "none"


def test_recipe_follows_simulator_and_customisation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sim.py").write_text("v = 1\n")
    monkeypatch.setattr(image, "sim_dir", lambda: tmp_path)
    r1 = image.recipe_hash()
    (tmp_path / "sim.py").write_text("v = 2\n")
    r2 = image.recipe_hash()
    assert r1 != r2
    monkeypatch.setattr(image, "CUSTOMISE_VERSION", image.CUSTOMISE_VERSION + 1)
    assert image.recipe_hash() != r2
    assert image.base_hash() == image.base_hash(image.packages())  # base untouched by either


def test_mirror_from_deb822(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert image.debian_mirror() == "http://mirror.example/debian"
