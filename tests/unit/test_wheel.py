"""The built wheel runs outside a checkout: its roles, validators and Pulumi program are package data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from clusterforge import ansible_deps
from clusterforge.errors import ClusterforgeError
from tests.conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, installed (without dependencies) into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp, REPO],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = tmp.glob("clusterforge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "clusterforge/_assets/playbooks/site.yml",
        "clusterforge/_assets/playbooks/ansible.cfg",
        "clusterforge/_assets/playbooks/roles/os_tuning/tasks/main.yml",
        "clusterforge/_assets/validators/conftest.py",
        "clusterforge/_assets/stacks/cluster/Pulumi.yaml",
        "clusterforge/_assets/monitoring/alerts/clusterforge.rules.yml",
        "clusterforge/spec/catalog/h100-sxm-8x400g-ib.yaml",
    ):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    target = tmp / "site"
    inst = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, wheel]
    proc = subprocess.run(inst, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return target


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERFORGE_")}
    env["PYTHONPATH"] = str(site)  # ahead of the checkout's editable install
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_wheel_finds_its_assets_outside_a_checkout(installed: Path, tmp_path: Path) -> None:
    code = (
        "import json, clusterforge, clusterforge.assets as a;"
        "print(json.dumps([clusterforge.__file__, str(a.playbooks()), str(a.validators()), str(a.stacks()),"
        "str(a.monitoring())]))"
    )
    proc = _run(installed, tmp_path, "-c", code)
    assert proc.returncode == 0, proc.stderr
    paths = json.loads(proc.stdout)
    assert all(p.startswith(str(installed)) for p in paths), paths


def test_wheel_plans_from_an_empty_folder(installed: Path, tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    spec.write_text((REPO / "inventory/clusters/lab.yaml").read_text())
    proc = _run(
        installed, tmp_path, "-m", "clusterforge.cli", "plan", "lab.yaml", "--format", "json", "--no-svg"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cluster"] == "lab"
    assert (tmp_path / "inventory/generated/lab/plan.json").is_file()
    version = _run(installed, tmp_path, "-m", "clusterforge.cli", "--version")
    assert version.returncode == 0 and version.stdout.startswith("clusterforge ")


def test_an_overridden_asset_folder_must_hold_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge import assets

    monkeypatch.setenv("CLUSTERFORGE_PLAYBOOKS", str(tmp_path))
    with pytest.raises(ClusterforgeError, match="CLUSTERFORGE_PLAYBOOKS"):
        assets.playbooks()
    (tmp_path / "site.yml").write_text("[]\n")
    assert assets.playbooks() == tmp_path.resolve()


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_collections_extract_only_the_wanted_ones(tmp_path: Path) -> None:
    wheel = _zip(
        tmp_path / "ansible.whl",
        {
            "ansible_collections/ansible/posix/MANIFEST.json": "{}",
            "ansible_collections/ansible/posix/plugins/modules/sysctl.py": "#",
            "ansible_collections/community/general/MANIFEST.json": "{}",
            "ansible_collections/cisco/ios/MANIFEST.json": "{}",
        },
    )
    out = tmp_path / "out"
    assert ansible_deps.extract(wheel, out) == 3
    assert not (out / "ansible_collections/cisco").exists()


def test_collections_extract_refuses_paths_outside(tmp_path: Path) -> None:
    wheel = _zip(
        tmp_path / "evil.whl",
        {
            "ansible_collections/ansible/posix/MANIFEST.json": "{}",
            "ansible_collections/ansible/posix/../../../../escaped": "x",
            "ansible_collections/community/general/MANIFEST.json": "{}",
        },
    )
    with pytest.raises(ClusterforgeError, match="refusing to extract outside"):
        ansible_deps.extract(wheel, tmp_path / "out")
    assert not (tmp_path / "escaped").exists()


def test_collections_installed_reads_the_stamp(tmp_path: Path) -> None:
    root = tmp_path / "ansible_collections"
    for c in ansible_deps.COLLECTIONS:
        (root / c).mkdir(parents=True)
        (root / c / "MANIFEST.json").write_text("{}")
    assert not ansible_deps.installed(tmp_path)
    (root / ".clusterforge-stamp").write_text(
        ansible_deps.stamp_text(ansible_deps.VERSION, ansible_deps.SHA256)
    )
    assert ansible_deps.installed(tmp_path)
    assert not ansible_deps.installed(tmp_path, sha256="0" * 64)
