"""Recipe hashing: what makes the cached image rebuild (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterforge.lab import image
from tests.conftest import REPO


def test_base_hash_is_stable_and_order_free() -> None:
    pkgs = image.packages()
    assert image.base_hash(pkgs) == image.base_hash(list(reversed(pkgs)))
    assert image.base_hash(pkgs) != image.base_hash([*pkgs, "htop"])


ROLES = REPO / "playbooks/roles"


def _role_packages() -> set[str]:
    """Every Debian package name a role's defaults or Debian vars list under a *_package(s) knob."""
    out: set[str] = set()
    for f in [*ROLES.glob("*/vars/Debian.yml"), *ROLES.glob("*/defaults/main.yml")]:
        for key, value in (yaml.safe_load(f.read_text()) or {}).items():
            if key.endswith(("_package", "_packages")):
                values = value if isinstance(value, list) else [value]
                out |= {v for v in values if isinstance(v, str) and "{{" not in v}
    return out


def test_image_is_a_minimal_server_without_role_packages() -> None:
    pkgs = set(image.packages())
    assert {"openssh-server", "systemd", "python3", "ca-certificates", "grub2-common"} <= pkgs
    role_pkgs = _role_packages()
    assert {
        "chrony",
        "tuned",
        "irqbalance",
        "rdma-core",
        "perftest",
        "slurmd",
        "munge",
        "pciutils",
    } <= role_pkgs
    both = pkgs & role_pkgs
    # a role may list a package every minimal install has (the rdma role's iproute2, kmod): never more
    assert both <= {"iproute2", "kmod"}, f"the node image pre-installs what roles install: {sorted(both)}"


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
