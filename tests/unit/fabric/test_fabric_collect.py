"""`fabric check --collect` records each RoCE node's `lldpctl -f json` over SSH into the discovery folder;
a node that cannot answer is listed with its reason and leaves no file (never an older view in its place).
With a stand-in `ssh` on PATH that answers as the nodes would (a real lldpcli JSON capture for one)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from clusterforge.flows import fabric_collect
from clusterforge.remote.ssh import SshSetup

REAL = (
    Path(__file__).parents[2]
    / "fixtures/real/lldpcli-json0__gpu-node-5-rails-sonic-ds730-leafs-unifabric__2.txt"
)

PLAN = {
    "nodes": [
        {"name": "r1", "mgmt_ip": "10.0.0.1", "fabric_type": "roce"},
        {"name": "r2", "mgmt_ip": "10.0.0.2", "fabric_type": "roce"},
        {"name": "r3", "mgmt_ip": "10.0.0.3", "fabric_type": "roce"},
        {"name": "i1", "mgmt_ip": "10.0.0.4", "fabric_type": "infiniband"},
    ]
}

# ssh -F CONFIG NODE COMMAND: r1 answers with the capture; r2's lldpd is not running; r3 does not answer
SSH = """#!/bin/sh
node="$3"; cmd="$4"
echo "$node $cmd" >> {log}
[ "$node" = r3 ] && {{ echo "ssh: connect to host r3 port 22: Connection refused" >&2; exit 255; }}
[ "$cmd" = true ] && exit 0
[ "$cmd" = "-O" ] && exit 0
if [ "$node" = r1 ]; then cat {real}; exit 0; fi
echo "lldpctl: unable to connect to lldpd daemon" >&2; exit 1
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(SSH.format(log=log, real=REAL))
    (bin_dir / "ssh").chmod(0o755 | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(
        fabric_collect,
        "ssh_setup",
        lambda doc, inv, nodes: SshSetup(tmp_path / "ssh", tmp_path / "ssh" / "cfg", list(nodes)),
    )
    monkeypatch.setattr("clusterforge.remote.ssh.time.sleep", lambda s: None)
    return log


def test_collects_roce_nodes_and_names_the_ones_that_did_not_answer(fake: Path, tmp_path: Path) -> None:
    folder = tmp_path / "disc"
    folder.mkdir()
    (folder / "r2.json").write_text("{}")  # an older view of r2: must not stay in for this run
    got = fabric_collect.collect(PLAN, tmp_path, folder)
    assert got.written == ["r1"]
    assert (folder / "r1.json").read_text() == REAL.read_text()
    assert set(got.missed) == {"r2", "r3"}
    assert "unable to connect to lldpd" in got.missed["r2"]
    assert got.missed["r3"].startswith("unreachable:")
    assert sorted(p.name for p in folder.iterdir()) == ["r1.json"]
    calls = fake.read_text().splitlines()
    assert "r1 lldpctl -f json" in calls
    assert not any(c.startswith("i1 ") for c in calls), "InfiniBand nodes have no LLDP view to collect"


def test_no_roce_node_no_ssh(tmp_path: Path) -> None:
    got = fabric_collect.collect({"nodes": [PLAN["nodes"][3]]}, tmp_path, tmp_path / "d")
    assert got.written == [] and got.missed == {}


def test_cli_nothing_collected_is_no_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node unreachable: exit 1 (nothing measured), never 3 (miscabled) or 2 (bad input)."""
    from typer.testing import CliRunner

    from clusterforge.cli import app
    from clusterforge.flows import plan as plan_flow
    from tests.conftest import REPO, example_plan

    monkeypatch.setattr(plan_flow, "load_plan", lambda spec: (example_plan("lab"), tmp_path))
    monkeypatch.setattr(
        fabric_collect,
        "collect",
        lambda doc, inv, folder: fabric_collect.Collected(folder, [], {"roce-01": "unreachable: timed out"}),
    )
    spec = str(REPO / "inventory/clusters/lab.yaml")
    res = CliRunner().invoke(app, ["fabric", "check", spec, "--collect", "--discovery", str(tmp_path / "d")])
    assert res.exit_code == 1, res.output
    assert "roce-01: unreachable: timed out" in res.output
    assert "no node answered" in res.output
    res = CliRunner().invoke(app, ["fabric", "check", spec])
    assert res.exit_code == 2, res.output
