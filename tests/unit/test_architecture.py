"""The layers hold: the lab is one target (no `target == "lab"` branch outside its target module and the
registry), `plan/` reads no environment, and the import contracts of pyproject.toml are kept."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import clusterforge

SRC = Path(clusterforge.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
ALLOWED_TARGET_DISPATCH = {"lab/target.py", "targets/__init__.py"}
TARGET_DISPATCH = re.compile(
    r"""target"?\]?\)? *[!=]= *["'](lab|baremetal)["']|["'](lab|baremetal)["'] *[!=]= *"""
)


def _product_files() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if "_assets" not in p.relative_to(SRC).parts]


def test_the_pattern_finds_every_spelling_of_a_target_branch() -> None:
    for line in (
        'if doc["target"] == "lab":',
        'if plan_doc.get("target") != "lab":',
        "if target == 'baremetal':",
        'if "lab" == doc["target"]:',
    ):
        assert TARGET_DISPATCH.search(line), line
    assert not TARGET_DISPATCH.search('name = "lab"')


def test_no_target_branch_outside_the_lab_target_and_the_registry() -> None:
    found = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in _product_files()
        if str(p.relative_to(SRC)) not in ALLOWED_TARGET_DISPATCH
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if TARGET_DISPATCH.search(line)
    ]
    assert found == []


def test_plan_reads_no_environment_and_holds_no_lab_constant() -> None:
    plan = SRC / "plan"
    found = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in plan.rglob("*.py")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"os\.environ|getenv|/var/lib/clusterforge/lab|10\.244\.|LAB_", line)
    ]
    assert found == []


@pytest.mark.skipif(
    shutil.which("lint-imports", path=os.path.dirname(sys.executable)) is None,
    reason="lint-imports is not in this venv (it comes with the dev extra: make venv)",
)
def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    assert exe is not None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC.parent), os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run(
        [exe, "--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
