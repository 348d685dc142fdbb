"""Burn-in on the lab as an operator runs it: after `clusterforge provision` (the session fixture
`provisioned_lab`: the NVIDIA stack, its services, nvidia_peermem, rail addresses and the benchmark tools all
come from the roles; nothing is installed here). Every node starts from the `provisioned` snapshot and goes
back to it at the end of the module, so later modules find the lab as provisioning left it.

Records and certificates go to a temp folder; faults are cleared and every node is resumed in Slurm
afterwards, whatever happened.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest


def clear_faults(lab: Any, node: str) -> None:
    from clusterforge.lab.sim import paths

    lab.exec(node, [paths.ENTRY, "fault", "clear", "all"], timeout=60)


@pytest.fixture(scope="module")
def burnin_lab(provisioned_lab: Any) -> Iterator[Any]:
    """The provisioned lab (this session is registered as a lab user by the `lab` fixture, so no other
    session takes the lab down under it)."""
    lab = provisioned_lab.lab
    names = [n.name for n in lab.plan.nodes]
    provisioned_lab.restore(*names)
    resume_all(lab)
    wait_schedulable(lab)
    try:
        yield lab
    finally:
        try:
            with ThreadPoolExecutor(max_workers=len(names)) as pool:
                list(pool.map(lambda n: clear_faults(lab, n), names))
        finally:
            provisioned_lab.restore(*names)
            resume_all(lab)
            wait_schedulable(lab)


def resume_all(lab: Any) -> None:
    """Every lab node back in Slurm, whatever burn-in left drained."""
    from clusterforge.pool.slurm import SlurmPool

    pool = SlurmPool(env=dict(os.environ, **lab.slurm_env()))
    for name, st in pool.status([n.name for n in lab.plan.nodes]).items():
        if st.state in ("drained", "draining", "down"):
            pool.resume(name, force=True)


def wait_schedulable(lab: Any, timeout: float = 120.0) -> None:
    """Until Slurm sees every node responding again (a restored node restarted its slurmd; slurmctld marks
    it responding on its next contact), or `timeout` passed: the tests then show what is wrong."""
    from clusterforge.pool.slurm import SlurmPool

    pool = SlurmPool(env=dict(os.environ, **lab.slurm_env()))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(st.schedulable for st in pool.status([n.name for n in lab.plan.nodes]).values()):
            return
        time.sleep(2)


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(tmp_path / "certs"))
    monkeypatch.delenv("CLUSTERFORGE_CERT_KEY", raising=False)
    return tmp_path / "records.db"
