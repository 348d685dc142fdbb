"""Fixtures of the pool tests: `k8s`, the local Kubernetes API stand-in (k8s_standin.py); a records
directory per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from k8s_standin import k8s

from clusterforge import childenv
from clusterforge.records import signing

__all__ = ["k8s"]


@pytest.fixture(autouse=True)
def records_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A records directory (and signing key) of the test's own; no key variable."""
    root = tmp_path_factory.mktemp("records")
    monkeypatch.setenv("CLUSTERFORGE_DB", str(root / "records.db"))
    monkeypatch.setenv("HOME", str(root / "home"))  # nothing reaches the real ~/.local/state
    for name in (signing.LEGACY_KEY_ENV, signing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(childenv, "_captured", {})
    return root
