"""Rules every validator keeps: a tier marker on every check, no lab or simulator paths, no lab-only branch,
and fix hints that name role tags that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from clusterforge.certify.fixes import FIXES

from .conftest import VALIDATORS

REPO = VALIDATORS.parent
FILES = sorted(VALIDATORS.glob("*.py"))
TIERS = {"quick", "full", "burnin"}


def marks(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "mark":
            out.add(n.attr)
    return out


@pytest.mark.parametrize("path", [p for p in FILES if p.name.startswith("test_")], ids=lambda p: p.name)
def test_every_check_has_a_tier(path: Path) -> None:
    tree = ast.parse(path.read_text())
    module_marks = set().union(
        *(
            marks(n)
            for n in tree.body
            if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
        )
    )
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert tests
    for t in tests:
        assert (module_marks | set().union(*(marks(d) for d in t.decorator_list))) & TIERS, t.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_lab_or_simulator_paths(path: Path) -> None:
    text = path.read_text()
    for bad in (
        "clusterforge-sim",
        "/var/lib/clusterforge/lab",
        "/run/clusterforge-sim",
        "lab.sim",
        "clusterforge.lab",
        "CLUSTERFORGE_SIM",
        "/etc/clusterforge/node.json",
        "synthetic",
    ):
        assert bad not in text, f"{path.name} mentions {bad!r}"
    assert not re.search(r"\bif\b.*\b(lab|simulat\w*)\b", text), f"{path.name} branches on the lab"


def role_tags() -> set[str]:
    tags: set[str] = set()
    for f in (REPO / "playbooks").rglob("*.yml"):
        for m in re.finditer(r"tags:\s*\[([^\]]*)\]", f.read_text(errors="replace")):
            tags.update(t.strip() for t in m.group(1).split(","))
    return tags


def test_fix_hints_name_existing_role_tags() -> None:
    roles = REPO / "playbooks" / "roles"
    if not roles.is_dir():
        pytest.skip("playbooks/roles not in this checkout")
    tags = role_tags()
    for key, fix in FIXES.items():
        if fix.tag is None:
            assert fix.action, key
            continue
        if not (roles / str(fix.role)).is_dir():
            continue  # that role is not in this checkout yet
        assert fix.tag in tags, f"fix {key!r}: tag {fix.tag!r} is not a tag of role {fix.role}"
