"""Pulumi mocks set per test (function scope), so tests in several files never share config or state."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pulumi
import pytest
from pulumi_mocks import ROOT, RecordingMocks, RecordingMonitor


@pytest.fixture
def stack() -> Iterator[Callable[..., RecordingMocks]]:
    """stack(config={...}, secrets=[...], name=...) sets fresh mocks and config for this test only."""

    def configure(
        config: dict[str, str], secrets: list[str] | None = None, name: str = "test"
    ) -> RecordingMocks:
        mocks = RecordingMocks()
        ROOT.set(None)  # a fresh root Stack per test (set_mocks keeps an existing one)
        pulumi.runtime.set_mocks(
            mocks, project="clusterforge", stack=name, preview=False, monitor=RecordingMonitor(mocks)
        )
        pulumi.runtime.set_all_config(config, secrets or [])
        return mocks

    yield configure
    pulumi.runtime.set_all_config({}, [])
