"""The host's slurmctld sees every lab node; drain/resume and srun work."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

pytestmark = pytest.mark.lab


def _slurm(lab: Any, *argv: str) -> str:
    r = subprocess.run(list(argv), env=lab.slurm_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _states(lab: Any) -> dict[str, str]:
    out = _slurm(lab, "sinfo", "-N", "-h", "-o", "%N %t")
    return dict(line.split() for line in out.splitlines())


def _wait_idle(lab: Any, names: list[str], timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        st = _states(lab)
        if all(st.get(n) == "idle" for n in names) or time.monotonic() > deadline:
            return st
        time.sleep(1)


def test_sinfo_lists_every_node_idle(lab: Any) -> None:
    names = [n.name for n in lab.plan.nodes]
    st = _wait_idle(lab, names)
    assert {n: st.get(n) for n in names} == dict.fromkeys(names, "idle")
    parts = _slurm(lab, "sinfo", "-h", "-o", "%R").split()
    assert sorted(parts) == sorted(lab.plan.pools)


def test_drain_and_resume(lab: Any) -> None:
    node = lab.plan.nodes[0].name
    _slurm(lab, "scontrol", "update", f"nodename={node}", "state=drain", "reason=clusterforge-test")
    try:
        assert "clusterforge-test" in _slurm(lab, "sinfo", "-R", "-h", "-n", node)
        assert _states(lab)[node] in ("drain", "drng")
    finally:
        _slurm(lab, "scontrol", "update", f"nodename={node}", "state=resume")
    assert _wait_idle(lab, [node], 30)[node] == "idle"


def test_srun_on_two_nodes(lab: Any) -> None:
    pool, members = next(((p, m) for p, m in lab.plan.pools.items() if len(m) >= 2), (None, []))
    if pool is None:
        pytest.skip("no pool with two nodes")
    _wait_idle(lab, members[:2])
    out = _slurm(lab, "srun", "-p", pool, "-N2", "-w", ",".join(members[:2]), "-D", "/tmp", "hostname")
    assert sorted(out.split()) == sorted(members[:2])
