"""tests/unit/bios loads validators/test_bios.py, which is marked with the certification tier `full`."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "full: certification tier (validators/test_bios.py)")
