"""Fixtures for the plan tests: the example plans (tests/conftest.py), and spec text mutation."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from clusterforge.plan import Plan, build_plan
from clusterforge.spec import load_spec_text
from tests.conftest import CLUSTERS, example_plan


@pytest.fixture(scope="session")
def example() -> Callable[[str], Plan]:
    """`example("lab")`: the plan of inventory/clusters/lab.yaml (built once, shared: read only)."""
    return example_plan


def without_node_entries(text: str) -> str:
    """The spec text without its pools' `nodes:` lists and the comment above them (the lab spec gives every
    node a BMC there; the tests that edit it add the per-node entries they are about themselves)."""
    text = re.sub(r"(?m)^    # .*\n(?=(?:    # .*\n)*    nodes:\n)", "", text)
    return re.sub(r"(?m)^    nodes:\n(?:      .*\n)+", "", text)


@pytest.fixture(scope="session")
def spec_text() -> Callable[[str], str]:
    """`spec_text("lab")`: inventory/clusters/lab.yaml as text, less its per-node entries (the BMCs)."""
    return lambda name: without_node_entries((CLUSTERS / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def plan_text() -> Callable[[str], Plan]:
    """`plan_text(yaml)`: the plan of a spec given as text."""
    return lambda text: build_plan(load_spec_text(text, "test.yaml"))


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


@pytest.fixture(scope="session")
def edit() -> Callable[[str, str, str], str]:
    """`edit(text, old, new)`: replace the one occurrence of `old`."""
    return _edit
