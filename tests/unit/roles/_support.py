"""Paths and helpers shared by the role tests."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import PLAYBOOKS

ROLES = PLAYBOOKS / "roles"
HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
INVENTORY = FIXTURES / "inventory" / "hosts.yml"
BIN = Path(sys.executable).parent


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> dict:
        """The ansible.posix.json callback's document (stdout)."""
        return json.loads(self.stdout[self.stdout.index("{") :])


Runner = Callable[..., Result]


def task_results(doc: dict) -> list[tuple[str, str, dict]]:
    """(task name, host, result) for every task result in an ansible.posix.json document, in order."""
    out = []
    for play in doc.get("plays", []):
        for task in play.get("tasks", []):
            for host, res in task.get("hosts", {}).items():
                out.append((task["task"]["name"], host, res))
    return out
