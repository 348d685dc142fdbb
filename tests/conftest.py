"""Shared by every test (unit and integration): the repository's paths, and the example plans built once.

Module-level use: `from tests.conftest import REPO, LAB_SPEC, example_plan`. Fixtures: `lab_plan` (the plan of
inventory/clusters/lab.yaml, built once per session and shared: read it, never change it) and `lab_doc` (a
deep copy of its document for one test, free to change). The integration tests' lab fixtures stay in
tests/integration/conftest.py.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from clusterforge.plan import Plan

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
CLUSTERS = REPO / "inventory" / "clusters"
LAB_SPEC = CLUSTERS / "lab.yaml"


def without_storage(text: str) -> str:
    """A spec's text less its top-level `storage:` section and the comment right above it: the base for tests
    that add a storage section of their own."""
    out = re.sub(r"(?m)^(?:#.*\n)*storage:\n(?:(?:[ #].*)?\n)*", "", text)
    assert "\nstorage:" not in out
    return out


REAL = TESTS / "fixtures" / "real"  # real captured tool outputs (SOURCES.md)
PLAYBOOKS = REPO / "playbooks"
VALIDATORS = REPO / "validators"


@cache
def example_plan(name: str) -> Plan:
    """The plan of inventory/clusters/NAME.yaml, built once per process and shared: never change it (copy
    its `doc` with `copy.deepcopy` first)."""
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    return build_plan(load_spec(CLUSTERS / f"{name}.yaml"))


@pytest.fixture(scope="session")
def lab_plan() -> Plan:
    """The lab plan (inventory/clusters/lab.yaml), shared by the session: read only."""
    return example_plan("lab")


@pytest.fixture
def lab_doc(lab_plan: Plan) -> dict[str, Any]:
    """The lab plan's document for one test: a deep copy, free to change."""
    return copy.deepcopy(lab_plan.doc)
