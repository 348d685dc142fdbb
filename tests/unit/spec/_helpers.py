"""Helpers for spec tests: mutate the lab spec as text (so line numbers stay meaningful) and load it."""

from __future__ import annotations

import re

import pytest

from clusterforge.errors import InputError, Problem
from clusterforge.spec import load_spec_text
from tests.conftest import CLUSTERS, without_storage

LAB_SPEC = (CLUSTERS / "lab.yaml").read_text(encoding="utf-8")
FILE = "clusters/test.yaml"


def without_node_entries(text: str) -> str:
    """The spec text without its pools' `nodes:` lists and the comment above them: the lab spec gives every
    node a BMC there; the tests that edit it as text add the per-node entries they are about themselves."""
    text = re.sub(r"(?m)^    # .*\n(?=(?:    # .*\n)*    nodes:\n)", "", text)
    return re.sub(r"(?m)^    nodes:\n(?:      .*\n)+", "", text)


# the lab spec less its BMC entries and its storage section: the base the error tests edit
LAB = without_storage(without_node_entries(LAB_SPEC))


def edit(text: str, old: str, new: str) -> str:
    """Replace the one occurrence of `old` (fails loudly if the fixture text changed)."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based number of the nth line containing `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not found {nth} time(s)"
    return hits[nth - 1]


def problems(text: str) -> list[Problem]:
    with pytest.raises(InputError) as info:
        load_spec_text(text, FILE)
    assert info.value.exit_code == 2
    assert all(p.file == FILE for p in info.value.problems)
    return info.value.problems


def only(text: str) -> Problem:
    """The single problem of `text` (a spec with exactly one mistake must yield exactly one report line)."""
    found = problems(text)
    assert len(found) == 1, "\n".join(p.render() for p in found)
    return found[0]


def at(found: list[Problem], path: str) -> Problem:
    hits = [p for p in found if p.path == path]
    assert len(hits) == 1, f"no single problem at {path}: " + "\n".join(p.render() for p in found)
    return hits[0]
