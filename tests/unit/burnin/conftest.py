"""Fixtures of the burn-in unit tests (data helpers in burnin_data.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from burnin_data import plan_of


@pytest.fixture(scope="session")
def lab_plan() -> dict[str, Any]:
    return plan_of("lab")


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Records database and certificate folder in a temp dir."""
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(tmp_path / "certs"))
    monkeypatch.delenv("CLUSTERFORGE_CERT_KEY", raising=False)
    yield tmp_path
