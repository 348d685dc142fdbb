"""Every records test has its own records directory (and so its own signing key), and no key variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge import childenv
from clusterforge.records import signing


@pytest.fixture(autouse=True)
def records_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("records")
    monkeypatch.setenv("CLUSTERFORGE_DB", str(root / "records.db"))
    monkeypatch.setenv("HOME", str(root / "home"))  # nothing reaches the real ~/.local/state
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(root / "certificates"))
    for name in (signing.LEGACY_KEY_ENV, signing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(childenv, "_captured", {})
    return root
