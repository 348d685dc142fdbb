"""The boot-time scripts the roles install are valid bash once rendered."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .test_templates import render

SCRIPTS = [
    ("os_tuning", "templates/clusterforge-os-tuning.sh.j2"),
    ("nvidia_gpu", "templates/clusterforge-acs.sh.j2"),
    ("rdma", "templates/clusterforge-roce-qos.sh.j2"),
]


@pytest.mark.parametrize(("role", "template"), SCRIPTS)
def test_script_is_valid_bash(role: str, template: str, tmp_path: Path) -> None:
    text = render(role, templates={"s": template})["s"]
    assert text.startswith("#!/bin/bash\n")
    script = tmp_path / "script.sh"
    script.write_text(text)
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    if shutil.which("shellcheck"):
        proc = subprocess.run(
            ["shellcheck", "-S", "warning", str(script)], capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stdout
