"""Fixtures for the role tests: an Ansible environment and a runner for the ansible CLIs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

from ._support import BIN, PLAYBOOKS, Result, Runner


@pytest.fixture(scope="session")
def collections_installed() -> Path:
    """ansible.posix + community.general extracted from the pinned ansible wheel (fast when done)."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "install-collections.sh")],
        env={**os.environ, "PYTHON": sys.executable},  # the interpreter running the tests has clusterforge
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return REPO / "collections"


@pytest.fixture(scope="session")
def ansible_env(collections_installed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("ansible")
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(PLAYBOOKS / "ansible.cfg"),
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_LOCAL_TEMP=str(tmp / "local"),
        ANSIBLE_REMOTE_TEMP=str(tmp / "remote"),
        ANSIBLE_HOME=str(tmp / "home"),
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_DEPRECATION_WARNINGS="0",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


@pytest.fixture(scope="session")
def run_ansible(ansible_env: dict[str, str]) -> Runner:
    """Run an ansible CLI (ansible-playbook, ansible-lint, ...) from the venv; never raises on rc."""

    def _run(
        tool: str,
        *args: str,
        json_output: bool = False,
        env: dict[str, str] | None = None,
        cwd: Path = REPO,
        timeout: int = 600,
    ) -> Result:
        e = dict(ansible_env)
        if json_output:
            e["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
        if env:
            e.update(env)
        proc = subprocess.run(
            [str(BIN / tool), *args],
            capture_output=True,
            text=True,
            env=e,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return _run
