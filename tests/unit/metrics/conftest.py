"""Every metrics test has its own records database, certificate folder and signing key."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge import childenv
from clusterforge.records import signing


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "state"
    root.mkdir()
    monkeypatch.setenv("CLUSTERFORGE_DB", str(root / "records.db"))
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(root / "certificates"))
    for name in (signing.LEGACY_KEY_ENV, signing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(childenv, "_captured", {})
    return root
