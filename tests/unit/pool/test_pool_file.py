"""File pool manager: atomic registry (a crash before the rename leaves the old one), lock, semantics."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clusterforge.pool.base import HOLD_REASON, PoolError, ResumeRefused
from clusterforge.pool.file import FilePool

CERT = {"node": "n1", "verdict": "pass", "tier": "quick", "expectation_digest": "d" * 64}


def test_drain_resume_admit(tmp_path: Path) -> None:
    pool = FilePool(tmp_path / "pool.json")
    assert pool.status(["n1"])["n1"].state == "unknown"
    assert pool.drain("n1", "failed gpu.ecc")
    s = pool.status(["n1"])["n1"]
    assert (s.state, s.reason, s.labels) == (
        "drained",
        "clusterforge: failed gpu.ecc",
        {"clusterforge.io/certified": "false"},
    )
    assert pool.resume("n1") and pool.status(["n1"])["n1"].state == "idle"
    assert pool.resume("n1") is False
    pool.admit("n1", CERT)
    data = json.loads((tmp_path / "pool.json").read_text())
    assert data["schema"] == 1
    assert data["nodes"]["n1"]["labels"] == {
        "clusterforge.io/certified": "true",
        "clusterforge.io/tier": "quick",
        "clusterforge.io/expectation-digest": "d" * 64,
    }
    assert set(pool.status()) == {"n1"}


def test_ownership_and_hold(tmp_path: Path) -> None:
    reg = tmp_path / "pool.json"
    reg.write_text(
        json.dumps({"schema": 1, "nodes": {"n1": {"state": "drained", "reason": "admin: rack move"}}})
    )
    pool = FilePool(reg)
    assert pool.drain("n1", "failed x") is False
    with pytest.raises(ResumeRefused):
        pool.resume("n1")
    assert pool.drain("n1", "failed x", force=True)
    pool.drain("n1", HOLD_REASON)
    with pytest.raises(ResumeRefused, match="held"):
        pool.admit("n1", CERT)
    pool.admit("n1", CERT, force=True)
    assert pool.status(["n1"])["n1"].state == "idle"


def test_unreadable_registry_is_an_error(tmp_path: Path) -> None:
    reg = tmp_path / "pool.json"
    reg.write_text("{half")
    with pytest.raises(PoolError, match="unreadable"):
        FilePool(reg).status()
    reg.write_text("[]")
    with pytest.raises(PoolError, match="not a pool registry"):
        FilePool(reg).drain("n1", "x")


_CRASH = textwrap.dedent("""
    import os, sys
    from clusterforge.pool.file import FilePool
    real_replace = os.replace
    def crash(src, dst):
        os._exit(9)  # the process dies after writing and fsyncing the temp file, before the rename
    os.replace = crash
    FilePool(sys.argv[1]).drain("n2", "failed while crashing")
""")


def test_crash_between_write_and_rename_leaves_the_old_registry(tmp_path: Path) -> None:
    reg = tmp_path / "pool.json"
    pool = FilePool(reg)
    pool.drain("n1", "failed before")
    before = reg.read_bytes()
    p = subprocess.run([sys.executable, "-c", _CRASH, str(reg)], check=False)
    assert p.returncode == 9
    assert reg.read_bytes() == before  # whole, and the old content
    leftovers = [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")]
    assert len(leftovers) == 1 and "failed while crashing" in (tmp_path / leftovers[0]).read_text()
    assert pool.drain("n2", "failed after")  # the next write works and the lock was released by the crash
    assert set(pool.status()) == {"n1", "n2"}


_WRITER = textwrap.dedent("""
    import sys
    from clusterforge.pool.file import FilePool
    pool = FilePool(sys.argv[1])
    for i in range(25):
        pool.drain(f"{sys.argv[2]}-{i}", "failed x")
""")


def test_two_processes_do_not_lose_each_others_writes(tmp_path: Path) -> None:
    reg = tmp_path / "pool.json"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(reg), tag]) for tag in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(FilePool(reg).status()) == 50


def test_wait_for_states(tmp_path: Path) -> None:
    from clusterforge.pool.base import wait_for

    pool = FilePool(tmp_path / "pool.json")
    pool.drain("n1", "rolling provision")
    assert wait_for(pool, ["n1"], timeout_s=1, poll_s=0.01)["n1"].state == "drained"
    pool.resume("n1")
    with pytest.raises(PoolError, match="n1 idle"):
        wait_for(pool, ["n1"], timeout_s=0.05, poll_s=0.01)
