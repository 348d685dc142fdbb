"""Ansible's inventory API is used by one thread at a time (a drift reads the validators' and the applied
state's SSH settings from two threads; two concurrent first loads broke Ansible's plugin loader)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clusterforge.remote import inventory


def test_inventory_loads_never_overlap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import ansible.inventory.manager as manager

    inside, most = [0], [0]
    guard = threading.Lock()

    class SlowInventory:
        def __init__(self, *a: Any, **kw: Any) -> None:
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with guard:
                inside[0] -= 1

        def get_host(self, name: str) -> None:
            return None

        def subset(self, pattern: str) -> None:
            return None

        def get_hosts(self, pattern: str) -> list[Any]:
            return []

    monkeypatch.setattr(manager, "InventoryManager", SlowInventory)
    calls = [lambda: inventory.connection_vars([str(tmp_path)], ["n1"]) for _ in range(3)]
    calls += [lambda: inventory.resolve_hosts(tmp_path, "n*") for _ in range(3)]
    threads = [threading.Thread(target=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 1
