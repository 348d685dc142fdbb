"""Expectations per node from plan.json and group_vars, and the validators' choice of target nodes.

The validators run one pytest process per node: each must read what its own node needs, not every
node's knobs (that grew with the square of the cluster: 32 nodes x 32 nodes' group_vars files).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterforge.plan import Plan, expect
from clusterforge.plan.expect import nodes_of
from tests.conftest import REPO


@pytest.fixture(scope="module")
def lab_inventory(tmp_path_factory: pytest.TempPathFactory, lab_plan: Plan) -> Path:
    from clusterforge.plan.outputs import write_outputs

    return write_outputs(lab_plan, tmp_path_factory.mktemp("inv"), svg=False)


def _doc(inv: Path) -> dict[str, Any]:
    return expect.read_plan_json(inv / "plan.json")


def test_knobs_come_from_the_nodes_groups(lab_inventory: Path) -> None:
    nodes = nodes_of(_doc(lab_inventory), lab_inventory)
    roce, ib = nodes["roce-01"], nodes["ib-01"]
    # fabric_type_roce.yml holds the RoCE knobs: a RoCE node has them, an InfiniBand node does not
    roce_only = set(roce.knobs) - set(ib.knobs)
    assert roce_only, "the RoCE node should carry knobs from group_vars/fabric_type_roce.yml"
    assert not any(isinstance(v, str) and "{{" in v for v in roce.knobs.values())  # templates left out


def test_names_selects_those_nodes_with_the_same_knobs(lab_inventory: Path) -> None:
    doc = _doc(lab_inventory)
    every = nodes_of(doc, lab_inventory)
    some = nodes_of(doc, lab_inventory, ["ib-02", "roce-01"])
    assert list(some) == ["roce-01", "ib-02"]  # plan order, not the order asked
    assert some["roce-01"] == every["roce-01"] and some["ib-02"] == every["ib-02"]


def test_each_group_vars_file_is_read_once(lab_inventory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real = expect._group_file

    def counting(path: Path) -> dict[str, Any]:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(expect, "_group_file", counting)
    doc = _doc(lab_inventory)
    doc = {**doc, "nodes": [dict(n, name=f"{n['name']}-{i}") for i in range(25) for n in doc["nodes"]]}
    nodes_of(doc, lab_inventory)
    assert len(reads) == len(set(reads)) <= 5  # all + 2 fabric types + 2 SKUs, for 100 nodes


def _collect(inv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", str(REPO / "validators"), "-p", "testinfra.plugin"]
    argv += ["-p", "no:cacheprovider", "--collect-only", "-q", "--plan", str(inv / "plan.json"), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=inv)


def test_validators_target_only_the_hosts_named(lab_inventory: Path) -> None:
    ip = next(n["mgmt_ip"] for n in _doc(lab_inventory)["nodes"] if n["name"] == "ib-02")
    p = _collect(lab_inventory, "-m", "quick", "--hosts", f"ssh://root@{ip}")
    assert p.returncode == 0, p.stdout + p.stderr
    items = [ln for ln in p.stdout.splitlines() if "::" in ln]
    assert items and all("[ib-02" in ln for ln in items), items[:5]


def test_validators_refuse_a_host_not_in_the_plan(lab_inventory: Path) -> None:
    p = _collect(lab_inventory, "--hosts", "ssh://root@192.0.2.99")
    assert p.returncode != 0
    assert "'ssh://root@192.0.2.99' is not a node of" in p.stdout + p.stderr
