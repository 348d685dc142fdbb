"""`clusterforge burnin` on the lab (real SSH, the lab's slurmctld, the simulator's seeded noise).

roce-01 gets a slow NIC on rail 3, ib-01 a slow GPU 2, roce-02 is noisy but healthy. A short burn-in must
fail exactly roce-01 (rail 3 NIC mlx5_3) and ib-01 (GPU 2), drain them with that in the reason, resume the
others, issue burnin certificates; a run SIGKILLed after its first committed iteration and resumed must
reach the same verdicts with iterations 1..N each exactly once; the HTML report must load in headless
Chromium without console errors and show the outliers.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cdp
import pytest

from clusterforge.records.burnin import BurninDB
from tests.conftest import REPO

pytestmark = pytest.mark.lab
ITERATIONS = 3
FAULTS = [("roce-01", "slow-nic", {"rail": 3}), ("ib-01", "slow-gpu", {"gpu": 2}), ("roce-02", "noisy", {})]


@pytest.fixture(scope="module")
def faulted(burnin_lab: Any) -> Iterator[Any]:
    from clusterforge.lab.sim import faults

    try:
        for node, kind, params in FAULTS:
            faults.apply(burnin_lab, node, kind, **params)
        yield burnin_lab
    finally:
        for node, kind, _ in FAULTS:
            faults.apply(burnin_lab, node, kind, clear=True)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "clusterforge.cli", *args]


def burnin_args(*extra: str) -> list[str]:
    """The fault scenario's burn-in: GPUs, NICs, links. --no-storage: the lab's scratch is a loop device on
    the host's page cache, whose run-to-run variation with 4 nodes at once (10-27 % measured) is the host's,
    not a node's; burn-in's storage runs for real in test_burnin_storage_lab.py."""
    return cli(
        "burnin",
        "inventory/clusters/lab.yaml",
        "--iterations",
        str(ITERATIONS),
        "--jobs",
        "4",
        "--no-storage",
        *extra,
    )


def check_verdicts(db: Path, bid: str) -> None:
    with BurninDB(db) as bdb:
        v = bdb.verdicts(bid)
    assert {n: x["verdict"] for n, x in v.items()} == {
        "roce-01": "fail",
        "ib-01": "fail",
        "roce-02": "pass",
        "ib-02": "pass",
    }, v
    comps = {n: {f["component"] for f in x["findings"]} for n, x in v.items()}
    assert comps["roce-01"] == {"rail 3 NIC mlx5_3"}, v["roce-01"]
    assert comps["ib-01"] and all(c.startswith("GPU 2") for c in comps["ib-01"]), v["ib-01"]
    kinds = {f["test"] for f in v["ib-01"]["findings"]}
    assert {"nvbandwidth.h2d", "nvbandwidth.d2h", "nvbandwidth.d2d", "all_reduce.node"} <= kinds


def pool_state(lab: Any) -> dict[str, Any]:
    from clusterforge.pool.slurm import SlurmPool

    return SlurmPool(env=dict(os.environ, **lab.slurm_env())).status([n.name for n in lab.plan.nodes])


def test_burnin_fails_exactly_the_faulty_nodes(faulted: Any, records: Path, tmp_path: Path) -> None:
    from clusterforge.records import Store, verify

    html = tmp_path / "burnin.html"
    t0 = time.monotonic()
    p = subprocess.run(
        burnin_args("--html", str(html)), cwd=REPO, capture_output=True, text=True, timeout=1200, check=False
    )
    took = time.monotonic() - t0
    assert p.returncode == 3, p.stdout[-3000:] + p.stderr[-3000:]
    with BurninDB(records) as bdb:
        (run,) = bdb.runs()
        assert [i["iteration"] for i in bdb.iterations(run.id)] == [1, 2, 3]
        per_it = [i["duration_s"] for i in bdb.iterations(run.id)]
    check_verdicts(records, run.id)
    print(f"\nburn-in of 4 lab nodes, {ITERATIONS} iterations: {took:.0f} s (iterations {per_it})")

    state = pool_state(faulted)
    assert state["roce-01"].state == "drained" and state["ib-01"].state == "drained"
    assert state["roce-01"].reason.startswith(
        "clusterforge: burnin outlier roce-01 rail 3 NIC mlx5_3 ib_write_bw"
    )
    assert "GPU 2" in state["ib-01"].reason
    assert state["roce-02"].state in ("idle", "busy") and state["ib-02"].state in ("idle", "busy")

    with Store(records) as store:
        assert store.get_run(run.id).status == "failed"
        for node, verdict in (("roce-01", "fail"), ("ib-01", "fail"), ("roce-02", "pass"), ("ib-02", "pass")):
            (cert,) = store.certificates(node, "burnin")
            assert cert["verdict"] == verdict and cert["issuer"]["run_id"] == run.id
            assert verify(cert).ok, verify(cert).reasons
        events = [(e.node, e.action) for n in ("roce-01", "roce-02") for e in store.pool_events(n)]
        assert ("roce-01", "drain") in events and ("roce-02", "resume") in events

    page = cdp.load(
        html.resolve().as_uri(),
        [
            "document.querySelectorAll('tr.fail').length",
            "Array.from(document.querySelectorAll('tr.fail')).map(r => r.dataset.node).sort().join(',')",
            "document.querySelector('tr[data-node=\"roce-01\"]').textContent",
            "document.querySelectorAll('img').length",
        ],
        ready_text="clusterforge-burnin-report-ready",
    )
    assert page.errors == [], page.errors
    vals = list(page.values.values())
    assert vals[0] == 2 and vals[1] == "ib-01,roce-01"
    assert "rail 3 NIC mlx5_3" in vals[2] and vals[3] >= 8


def test_killed_run_resumes_with_every_iteration_once(faulted: Any, records: Path) -> None:
    from clusterforge.records import Store

    proc = subprocess.Popen(
        burnin_args(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 600
    committed = 0
    try:
        while committed < 1:
            assert proc.poll() is None, f"burn-in ended ({proc.returncode}) before its first iteration"
            assert time.monotonic() < deadline, "no iteration committed in 600 s"
            time.sleep(0.5)
            committed = _count(records, "SELECT COUNT(*) FROM burnin_iterations")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and everything it started, mid-iteration 2
        proc.wait()
    with BurninDB(records) as bdb:
        (run,) = bdb.runs()
        assert run.status == "running" and 1 <= bdb.next_iteration(run.id) - 1 < ITERATIONS
        killed_at = bdb.next_iteration(run.id)
    p = subprocess.run(
        cli("burnin", "--resume", run.id[:8], "--jobs", "4"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert p.returncode == 3, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"from iteration {killed_at}" in p.stdout
    with BurninDB(records) as bdb:
        its = bdb.iterations(run.id)
        sessions = bdb.sessions(run.id)
        assert [i["iteration"] for i in its] == [1, 2, 3]
        assert len(sessions) == 2 and [s["first_iteration"] for s in sessions] == [1, killed_at]
        assert {i["run_id"] for i in its if i["iteration"] < killed_at} == {sessions[0]["run_id"]}
        assert {i["run_id"] for i in its if i["iteration"] >= killed_at} == {sessions[1]["run_id"]}
        counts = [
            _count(
                records,
                f"SELECT COUNT(*) FROM burnin_measurements WHERE burnin_id = '{run.id}' AND iteration = {i}",
            )
            for i in (1, 2, 3)
        ]
        assert counts[0] > 0 and len(set(counts)) == 1, counts  # whole iterations, same shape each
        assert bdb.get(run.id).status == "failed"
    check_verdicts(records, run.id)
    with Store(records) as store:
        store.mark_stale_incomplete()
        assert store.get_run(sessions[0]["run_id"]).status == "incomplete"
        assert store.get_run(sessions[1]["run_id"]).status == "failed"
    again = subprocess.run(
        cli("burnin", "--resume", run.id), cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 2 and "already failed" in again.stderr


def _count(db: Path, sql: str) -> int:
    con = sqlite3.connect(db, timeout=30)
    try:
        return int(con.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:  # tables not created yet
        return 0
    finally:
        con.close()
