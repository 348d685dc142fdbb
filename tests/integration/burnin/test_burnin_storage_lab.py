"""Burn-in's storage steps on the lab, for real: every node runs fio sequential read and write on its scratch
disk and on the shared JuiceFS volume at the same time as the others (docs/storage.md, "In the lab"). Each
run writes in a directory of its own, so no node reads or removes another's files (fixed names did: fio job
errors ENOENT on the shared volume); every node and target gets a figure, and healthy nodes pass.

One iteration: the lab's figures are its host's page cache and one Redis on 2 cores, so run-to-run variation
is not judged here (burn-in judges it on scratch only; tests/unit/burnin/test_burnin_storage.py), and fleets
of two per SKU are under the fleet minimum: what is judged is that every step measured and met the lab's
floors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterforge.records.burnin import BurninDB
from tests.conftest import REPO

pytestmark = pytest.mark.lab


def test_burnin_measures_every_nodes_scratch_and_shared_filesystem(burnin_lab: Any, records: Path) -> None:
    argv = [sys.executable, "-m", "clusterforge.cli", "burnin", "inventory/clusters/lab.yaml"]
    p = subprocess.run(
        [*argv, "--iterations", "1", "--jobs", "4"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    nodes = [n.name for n in burnin_lab.plan.nodes]
    with BurninDB(records) as bdb:
        (run,) = bdb.runs()
        got = {
            (m.node, m.test, m.component): m for _, m in bdb.measurements(run.id) if m.test.startswith("fio.")
        }
        verdicts = bdb.verdicts(run.id)
    want = {
        (n, t, c)
        for n in nodes
        for t in ("fio.seq_read", "fio.seq_write")
        for c in ("storage:scratch", "storage:shared")
    }
    assert set(got) == want, sorted(set(got) ^ want)
    bad = {k: (m.value, m.error) for k, m in got.items() if not m.ok or not m.value}
    assert not bad, bad
    assert {n: v["verdict"] for n, v in verdicts.items()} == dict.fromkeys(nodes, "pass"), verdicts
    # nothing left behind on the shared volume by any node's runs
    left = burnin_lab.exec(nodes[0], ["ls", "-A", "/shared"]).stdout.split()
    assert not [f for f in left if f.startswith((".cf-fio", "cf-fio"))], left
