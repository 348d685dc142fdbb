"""Shared helpers for the hardware-parser tests.

Real captured outputs live in ``tests/fixtures/real/`` (copied verbatim from the project's shared reference
set); they must never be edited to make a parser pass. Provenance of every file is in ``SOURCES.md`` in
that folder. Fixtures found for this project's own use (no real capture
existed in the shared set) live in ``tests/unit/hw/fixtures/`` with their source cited in the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REAL

LOCAL_DIR = Path(__file__).resolve().parent / "fixtures"


def real_dir() -> Path:
    """The real-fixture folder of the repository (a missing folder is a broken checkout: the test fails)."""
    assert REAL.is_dir(), f"real captured fixtures not found at {REAL}"
    return REAL


def read_real(name: str) -> str:
    path = real_dir() / name
    assert path.is_file(), f"fixture {name} missing from {REAL}"
    return path.read_text(encoding="utf-8")


def head(text: str, n: int) -> str:
    """The first ``n`` lines of ``text`` - a truncated capture."""
    return "".join(text.splitlines(keepends=True)[:n])


@pytest.fixture
def real() -> Callable[[str], str]:
    """``real("ibstat__...txt")`` -> the text of a shared real fixture."""
    return read_real


@pytest.fixture
def local() -> Callable[[str], str]:
    """``local("mlxconfig-q__...txt")`` -> the text of a fixture in tests/unit/hw/fixtures."""

    def _read(name: str) -> str:
        return (LOCAL_DIR / name).read_text(encoding="utf-8")

    return _read
