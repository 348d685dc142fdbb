"""The Slurm pool manager against a real slurmctld: the lab's (session fixture `lab` from
tests/integration/conftest.py) and a private controller started here (private_slurm.py).

Drain with a reason shows in `sinfo -R`; resume brings the node back to idle; status parses the real
output; a drain someone else made is left alone; the admission policy drains and admits through it.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import private_slurm
import pytest

from clusterforge.pool.admission import apply, decide
from clusterforge.pool.base import ResumeRefused
from clusterforge.pool.slurm import SlurmPool
from clusterforge.records import certificate as cm

pytestmark = pytest.mark.lab


@dataclass
class Target:
    env: dict[str, str]
    node: str
    plan: dict[str, Any]

    def run(self, *argv: str) -> str:
        r = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def sinfo_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t").strip()

    def wait_idle(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while (state := self.sinfo_state()) != "idle" and time.monotonic() < deadline:
            time.sleep(1)
        return state


@pytest.fixture(scope="module")
def private() -> Iterator[private_slurm.PrivateSlurm]:
    why = private_slurm.unavailable()
    if why:
        pytest.skip(why)
    ps = private_slurm.start()
    yield ps
    ps.stop()


@pytest.fixture(params=["lab", "private"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    if request.param == "lab":
        lab = request.getfixturevalue("lab")
        plan = json.loads(Path(request.getfixturevalue("lab_plan_path")).read_text())
        t = Target(dict(lab.slurm_env()), lab.plan.nodes[0].name, plan)
    else:
        ps = request.getfixturevalue("private")
        node = {"name": ps.node, "expectation_digest": "a" * 64}
        plan = {
            "cluster": "cfpooltest",
            "plan_hash": "b" * 64,
            "nodes": [node],
            "certification": {"join_tiers": ["quick"], "flap_window_hours": 24},
        }
        t = Target(ps.env(), ps.node, plan)
    assert t.wait_idle() == "idle"
    yield t
    if t.sinfo_state() != "idle":  # leave the node as we found it
        t.run("scontrol", "update", f"nodename={t.node}", "state=RESUME")
        t.wait_idle(30)


def test_status_parses_real_output(target: Target) -> None:
    pool = SlurmPool(env=target.env)
    states = pool.status()
    assert target.node in states and states[target.node].state == "idle"
    assert states[target.node].raw.startswith("IDLE")
    assert pool.status(["no-such-node"])["no-such-node"].state == "unknown"


def test_drain_shows_in_sinfo_and_resume_returns_to_idle(target: Target) -> None:
    pool = SlurmPool(env=target.env)
    assert pool.drain(target.node, 'failed gpu.count,nic.link\n"quoted" (+2 more)')
    reasons = target.run("sinfo", "-R", "-h", "-N", "-n", target.node, "-o", "%E|%N")
    assert reasons.strip() == f"clusterforge: failed gpu.count,nic.link quoted (+2 more)|{target.node}"
    state = pool.status([target.node])[target.node]
    assert state.state == "drained" and state.ours and state.raw == "IDLE+DRAIN"
    assert pool.resume(target.node)
    assert target.wait_idle(30) == "idle"
    assert pool.status([target.node])[target.node].state == "idle"


def test_someone_elses_drain_is_left_alone(target: Target) -> None:
    pool = SlurmPool(env=target.env)
    target.run("scontrol", "update", f"nodename={target.node}", "state=DRAIN", "reason=admin: PSU swap opt=1")
    state = pool.status([target.node])[target.node]
    assert (state.state, state.reason, state.ours) == ("drained", "admin: PSU swap opt=1", False)
    assert pool.drain(target.node, "failed x") is False
    with pytest.raises(ResumeRefused):
        pool.resume(target.node)
    assert "admin: PSU swap" in target.run("sinfo", "-R", "-h", "-N", "-n", target.node, "-o", "%E")
    assert pool.resume(target.node, force=True)
    assert target.wait_idle(30) == "idle"


def test_admission_drains_then_admits(target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cm.KEY_ENV, raising=False)
    pool = SlurmPool(env=target.env)
    node = next(n for n in target.plan["nodes"] if n["name"] == target.node)

    def cert(status: str) -> dict[str, Any]:
        return cm.build(
            cluster=str(target.plan["cluster"]),
            node=target.node,
            expectation_digest=node["expectation_digest"],
            plan_hash=target.plan["plan_hash"],
            tier="quick",
            checks=[{"id": "gpu.ecc", "status": status, "expected": 0, "found": 0, "evidence": {}}],
        )

    now = datetime.now(UTC)
    failed = decide(target.node, target.plan, [cert("fail")], [], now)
    assert apply(failed, pool) == "drained"
    assert "clusterforge: failed gpu.ecc" in target.run(
        "sinfo", "-R", "-h", "-N", "-n", target.node, "-o", "%E"
    )
    passed = decide(target.node, target.plan, [cert("pass")], [], now)
    assert apply(passed, pool) == "admitted"
    assert target.wait_idle(30) == "idle"
