"""gres.conf, topology.conf and the HealthCheckProgram script rendered from real plans."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusterforge.plan import Plan
from clusterforge.plan.build import fabric_doc
from clusterforge.plan.fabric import FabricInput, plan_fabric
from clusterforge.pool.slurm_conf import (
    hostlist,
    node_gres,
    render_gres_conf,
    render_healthcheck_script,
    render_topology_conf,
)
from tests.conftest import example_plan


@pytest.fixture(scope="module")
def lab(lab_plan: Plan) -> dict[str, Any]:
    return dict(lab_plan.doc)


@pytest.fixture(scope="module")
def four_su() -> dict[str, Any]:
    return dict(example_plan("h100-ib-4su").doc)


def _config_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0005"], "gpu-[0001-0003,0005]"),
        (["ib-01", "ib-02"], "ib-[01-02]"),
        ([f"ib0-su{i}" for i in range(1, 17)], "ib0-su[1-16]"),
        (["gpu-0999", "gpu-1000"], "gpu-[0999-1000]"),
        (["login", "n1", "n3", "n2"], "login,n[1-3]"),
        (["a7"], "a7"),
    ],
)
def test_hostlist(names: list[str], expected: str) -> None:
    assert hostlist(names) == expected


def test_lab_gres_conf(lab: dict[str, Any]) -> None:
    text = render_gres_conf(lab)
    lines = _config_lines(text)
    assert lines[0] == "AutoDetect=off"
    assert lines[1:9] == [
        f"NodeName=ib-[01-02] Name=gpu Type=h100 File=/dev/nvidia{i} Cores={'0-55' if i < 4 else '56-111'}"
        for i in range(8)
    ]
    assert len([line for line in lines if line.startswith("NodeName=roce-[01-02] ")]) == 8
    assert f"plan {lab['plan_hash'][:12]}" in text
    assert node_gres(lab, lab["nodes"][0]) == "gpu:h100:8"


def test_lab_topology_conf(lab: dict[str, Any]) -> None:
    text = render_topology_conf(lab)
    assert _config_lines(text) == [
        "SwitchName=roce0-su1 Nodes=roce-[01-02]",
        "SwitchName=roce0-spine Switches=roce0-su1",
        "SwitchName=ib0-su1 Nodes=ib-[01-02]",
        "SwitchName=ib0-spine Switches=ib0-su1",
    ]
    leaves = ", ".join(f"ib0-leaf-su0-r{r}" for r in range(8))
    assert f"# ib0-su1 rail leaves: {leaves}" in text


def test_four_su_topology_conf(four_su: dict[str, Any]) -> None:
    lines = _config_lines(render_topology_conf(four_su))
    assert lines == [
        "SwitchName=ib0-su1 Nodes=gpu-[0001-0032]",
        "SwitchName=ib0-su2 Nodes=gpu-[0033-0064]",
        "SwitchName=ib0-su3 Nodes=gpu-[0065-0096]",
        "SwitchName=ib0-su4 Nodes=gpu-[0097-0128]",
        "SwitchName=ib0-spine Switches=ib0-su[1-4]",
    ]
    gres = _config_lines(render_gres_conf(four_su))
    assert len(gres) == 1 + 8 and all("NodeName=gpu-[0001-0128] Name=gpu Type=h100" in g for g in gres[1:])


def test_every_node_is_under_exactly_one_leaf_switch(four_su: dict[str, Any]) -> None:
    text = render_topology_conf(four_su)
    members: list[str] = []
    for m in re.finditer(r"^SwitchName=\S+ Nodes=gpu-\[(\d+)-(\d+)\]$", text, re.M):
        members += [f"gpu-{i:04d}" for i in range(int(m.group(1)), int(m.group(2)) + 1)]
    assert sorted(members) == sorted(n["name"] for n in four_su["nodes"])


def test_three_tier_topology_groups_sus_by_pod_block() -> None:
    """A radix-8 fabric of 10 SUs x 2 rails needs 3 tiers and several pods per rail (engine-planned)."""
    names = tuple(f"n{i:02d}" for i in range(40))
    fab = plan_fabric(FabricInput("f0", "infiniband", names, rails=2, su_size=4, radix=8))
    doc = fabric_doc(fab, "1:1")
    assert doc["tiers"] == 3
    rails: dict[str, list[dict[str, Any]]] = {}
    for kind, a_dev, a_port, b_dev, *_ in doc["links"]:
        if kind == "node-leaf":
            rails.setdefault(a_dev, []).append({"index": a_port, "leaf": b_dev})
    nodes: list[dict[str, Any]] = [
        {"name": n, "fabric": "f0", "su": i // 4 + 1, "rails": rails[n]} for i, n in enumerate(names)
    ]
    plan = {
        "cluster": "t",
        "plan_hash": "0" * 64,
        "fabrics": [doc],
        "nodes": nodes,
    }
    lines = _config_lines(render_topology_conf(plan))
    blocks = [line for line in lines if "-block" in line.split()[0]]
    pods_per_rail = len({s[4] for s in doc["switches"] if s[1] == "leaf"}) // 2
    assert len(blocks) == pods_per_rail > 1
    leaf_pod = {s[0]: s[4] for s in doc["switches"] if s[1] == "leaf"}
    for line in blocks:
        block = int(line.split()[0].rsplit("block", 1)[1])
        sus = [int(x) for x in re.findall(r"\d+", line.split("Switches=")[1].replace("f0-su", ""))]
        lo, hi = (sus[0], sus[-1]) if len(sus) > 1 else (sus[0], sus[0])
        for su in range(lo, hi + 1):  # every leaf of every SU in the block is in one of the block's pods
            su_nodes = [n for n in nodes if n["su"] == su]
            assert {leaf_pod[r["leaf"]] // 2 for n in su_nodes for r in n["rails"]} == {block}
    assert lines[-1] == "SwitchName=f0-core Switches=" + hostlist(
        f"f0-block{b}" for b in range(pods_per_rail)
    )


def test_healthcheck_script_runs_certify_for_this_node(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    stub = tmp_path / "clusterforge"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 3\n')
    stub.chmod(0o755)
    log = tmp_path / "hc.log"
    script = tmp_path / "clusterforge-healthcheck"
    script.write_text(
        render_healthcheck_script(
            "lab", clusterforge=str(stub), log=str(log), lock=str(tmp_path / "hc.lock"), timeout_s=30
        )
    )
    script.chmod(0o755)
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    host = os.uname().nodename.split(".")[0]
    assert subprocess.run([str(script)], check=False).returncode == 0  # never fails slurmd's health check
    assert calls.read_text() == f"certify --tier quick --limit {host} --admit\n"
    text = script.read_text()
    assert "HealthCheckProgram=/usr/local/sbin/clusterforge-healthcheck" in text
    assert not [line for line in text.splitlines() if "scontrol" in line and not line.startswith("#")]
    assert "timeout --kill-after=30 30" in text and "flock -n 9" in text
