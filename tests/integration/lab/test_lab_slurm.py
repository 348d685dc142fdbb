"""The host's slurmctld sees every lab node once provisioned (the slurm_node role installs slurmd and munge:
a pristine node has neither); drain/resume and srun work; every node's GPUs are Slurm GRES from the plan's
gres.conf (the text the controller serves configless slurmd is the one the slurm_node role installs)."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

pytestmark = pytest.mark.lab
DOWN = {"down", "unk", "fail", "failg", "npc", "boot", "futr", "inval"}  # inval: registration refused


@pytest.fixture(scope="module")
def slurm_lab(provisioned_lab: Any) -> Any:
    return provisioned_lab.lab


def _slurm(lab: Any, *argv: str) -> str:
    r = subprocess.run(list(argv), env=lab.slurm_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _states(lab: Any) -> dict[str, str]:
    out = _slurm(lab, "sinfo", "-N", "-h", "-o", "%N %t")
    return dict(line.split() for line in out.splitlines())


def _wait(lab: Any, names: list[str], ok: Any, timeout: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        st = _states(lab)
        if all(st.get(n) is not None and ok(st[n]) for n in names) or time.monotonic() > deadline:
            return st
        time.sleep(1)


def _responding(state: str) -> bool:
    return not state.endswith("*") and state not in DOWN


def _wait_idle(lab: Any, names: list[str], timeout: float = 60) -> dict[str, str]:
    return _wait(lab, names, lambda s: s == "idle", timeout)


def test_sinfo_knows_every_node_responding(slurm_lab: Any) -> None:
    """Every node registered and responding (other tests may have drained or allocated some)."""
    lab = slurm_lab
    names = [n.name for n in lab.plan.nodes]
    st = _wait(lab, names, _responding, 60)
    bad = {n: st.get(n) for n in names if st.get(n) is None or not _responding(st[n])}
    assert not bad, st
    parts = _slurm(lab, "sinfo", "-h", "-o", "%R").split()
    assert sorted(parts) == sorted(lab.plan.pools)


def _idle(lab: Any) -> list[str]:
    st = _wait_idle(lab, [n.name for n in lab.plan.nodes], 20)
    return [n.name for n in lab.plan.nodes if st.get(n.name) == "idle"]


def test_drain_and_resume(slurm_lab: Any) -> None:
    lab = slurm_lab
    idle = _idle(lab)
    if not idle:
        pytest.skip("no idle node to drain (other tests hold them)")
    node = idle[0]
    _slurm(lab, "scontrol", "update", f"nodename={node}", "state=drain", "reason=clusterforge-test")
    try:
        assert "clusterforge-test" in _slurm(lab, "sinfo", "-R", "-h", "-n", node)
        assert _states(lab)[node] in ("drain", "drng")
    finally:
        _slurm(lab, "scontrol", "update", f"nodename={node}", "state=resume")
    assert _wait_idle(lab, [node], 30)[node] == "idle"


def test_srun_on_two_nodes(slurm_lab: Any) -> None:
    lab = slurm_lab
    idle = set(_idle(lab))
    pair = next(
        (
            [m for m in members if m in idle][:2]
            for members in lab.plan.pools.values()
            if len([m for m in members if m in idle]) >= 2
        ),
        None,
    )
    if pair is None:
        pytest.skip("no pool with two idle nodes")
    pool = next(p for p, members in lab.plan.pools.items() if pair[0] in members)
    out = _slurm(lab, "srun", "-p", pool, "-N2", "-w", ",".join(pair), "-D", "/tmp", "hostname")
    assert sorted(out.split()) == sorted(pair)


def test_gpus_are_gres_from_the_plans_gres_conf(slurm_lab: Any) -> None:
    """slurmd registered every node's GPUs (the /dev/nvidiaN files gres.conf names exist once the driver
    is loaded); configless slurmd got the controller's gres.conf, the same text the role put on the node;
    a job asking for two GPUs gets the first two."""
    from clusterforge.plan.slurm_files import node_gres, render_gres_conf

    lab = slurm_lab
    doc = lab.plan.raw
    text = render_gres_conf(doc)
    for n in doc["nodes"]:
        shown = _slurm(lab, "scontrol", "show", "node", n["name"])
        assert f"Gres={node_gres(doc, n)}" in shown.split(), shown
        assert "State=INVAL" not in shown and "count reported lower" not in shown, shown
        for path in ("/run/slurm/conf/gres.conf", "/etc/slurm/gres.conf"):
            r = lab.exec(n["name"], ["cat", path], timeout=30)
            assert r.returncode == 0 and r.stdout == text, f"{n['name']}:{path}: {r.stderr or r.stdout[:300]}"
    idle = _idle(lab)
    if not idle:
        pytest.skip("no idle node to run a GPU job on (other tests hold them)")
    node = next(n for n in doc["nodes"] if n["name"] == idle[0])
    pool = next(p for p, members in lab.plan.pools.items() if node["name"] in members)
    two = node_gres(doc, node).rsplit(":", 1)[0] + ":2"
    out = _slurm(
        lab,
        "srun",
        "-p",
        pool,
        "-w",
        node["name"],
        f"--gres={two}",
        "-D",
        "/tmp",
        "sh",
        "-c",
        "echo $CUDA_VISIBLE_DEVICES",
    )
    assert out.split() == ["0,1"], out
