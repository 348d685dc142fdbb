"""Validators run against a node that answers from real captures (tests/fixtures/real/) or from outputs
written here; commands go through the real Probe (timeouts, exit codes, parsing, cache)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from clusterforge.certify.checks import Probe
from clusterforge.plan import Plan
from clusterforge.plan.expect import NodeExpect, nodes_of
from tests.conftest import REAL, VALIDATORS

Answer = tuple[int, str] | tuple[int, str, str] | Callable[[], tuple[int, str]]


def real(name: str) -> str:
    path = REAL / name
    assert path.is_file(), f"real fixture {name} missing from {REAL}"
    return path.read_text()


def validator(area: str) -> ModuleType:
    """validators/test_<area>.py imported under a private name (it is not a package)."""
    spec = importlib.util.spec_from_file_location(f"cf_validator_{area}", VALIDATORS / f"test_{area}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeNode(Probe):
    """A Probe whose node answers from a table: command (as the validator writes it) -> (rc, stdout).

    A command not in the table is a missing tool (exit 127), as on a node without it."""

    def __init__(self, answers: dict[str, Answer], timeout: int = 30) -> None:
        super().__init__(host=None, node="n1", timeout=timeout)
        self.answers = answers
        self.asked: list[str] = []

    def _exec(self, command: str, timeout: int) -> tuple[int, str, str]:
        self.asked.append(command)
        ans = self.answers.get(command)
        if ans is None:
            return 127, "", f"sh: 1: {command.split()[0]}: not found"
        got = ans() if callable(ans) else ans
        return (got[0], got[1], got[2] if len(got) > 2 else "")


@pytest.fixture(scope="session")
def plan_nodes(lab_plan: Plan) -> dict[str, NodeExpect]:
    return nodes_of(lab_plan.doc)


@pytest.fixture
def ib_node(plan_nodes: dict[str, NodeExpect]) -> NodeExpect:
    return plan_nodes["ib-01"]


@pytest.fixture
def roce_node(plan_nodes: dict[str, NodeExpect]) -> Any:
    return plan_nodes["roce-01"]


def pytest_configure(config: pytest.Config) -> None:
    """The validators' markers (registered by their own conftest when they run against nodes)."""
    for name in ("quick", "full", "burnin", "bmc", "applies(predicate)"):
        config.addinivalue_line("markers", f"{name}: validator marker")
