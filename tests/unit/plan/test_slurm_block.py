"""topology.conf in Slurm's topology/block format for SKUs with multi-node NVLink domains (GB200 NVL72:
one block per 18-tray rack), and the tree format unchanged for every other example."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from clusterforge.lab import labplan
from clusterforge.lab.slurm import render_slurm_conf
from clusterforge.plan.slurm_files import (
    hostlist,
    nvlink_blocks,
    render_gres_conf,
    render_topology_conf,
    topology_plugin,
)
from tests.conftest import CLUSTERS, example_plan

GB200 = "gb200-nvl72-2rack"


def expand(expr: str) -> list[str]:
    """A hostlist expression of hostlist()'s form back to names: `gpu-[0001-0003,0005],n7` (test helper)."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", expr):
        m = re.fullmatch(r"(.*)\[(.*)\]", part)
        if not m:
            out.append(part)
            continue
        prefix, body = m.groups()
        for rng in body.split(","):
            lo, _, hi = rng.partition("-")
            width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
            out += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def _config(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def gb200() -> dict[str, Any]:
    return example_plan(GB200).doc


def test_expand_inverts_hostlist() -> None:
    names = ["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0005", "n7", "su9", "su10"]
    assert expand(hostlist(names)) == names


def test_one_block_per_nvlink_domain(gb200: dict[str, Any]) -> None:
    text = render_topology_conf(gb200)
    assert "TopologyPlugin=topology/block" in text and "SwitchName=" not in text
    lines = _config(text)
    assert all(line.startswith("BlockName=") for line in lines), lines
    blocks = dict(re.fullmatch(r"BlockName=(\S+) Nodes=(\S+)", line).groups() for line in lines)  # type: ignore[union-attr]
    assert list(blocks) == ["r01-nvl1", "r02-nvl1"]
    members = {b: expand(expr) for b, expr in blocks.items()}
    rack = {n["name"]: n["rack"] for n in gb200["nodes"]}
    for block, names in members.items():
        assert len(names) == gb200["skus"]["gb200-nvl72-4x400g-ib"]["nvlink_domain"]["nodes"] == 18
        assert {rack[n] for n in names} == {block.split("-")[0]}  # the domain is its rack
    every = [n for names in members.values() for n in names]
    assert sorted(every) == sorted(rack) and len(set(every)) == len(every)  # each node in exactly one block
    assert nvlink_blocks(gb200) == [(b, members[b]) for b in blocks]


def test_blocks_follow_the_plan_not_a_fixed_layout(gb200: dict[str, Any]) -> None:
    """Two domains per rack (36 trays per rack in the site layout): the blocks count within the rack."""
    doc = copy.deepcopy(gb200)
    for n in doc["nodes"]:
        n["rack"] = "r01"
    assert [b for b, _ in nvlink_blocks(doc)] == ["r01-nvl1", "r01-nvl2"]


def test_gres_for_four_gpus_per_tray(gb200: dict[str, Any]) -> None:
    lines = _config(render_gres_conf(gb200))
    gpus = [line for line in lines if line.startswith("NodeName=")]
    assert [re.search(r"File=(\S+)", line).group(1) for line in gpus] == [  # type: ignore[union-attr]
        f"/dev/nvidia{i}" for i in range(4)
    ]
    assert all(" Type=gb200 " in line for line in gpus)
    assert expand(gpus[0].split()[0].removeprefix("NodeName=")) == [n["name"] for n in gb200["nodes"]]
    # two Grace sockets of 72 cores: GPUs 0-1 on the first NUMA node, 2-3 on the second
    assert [re.search(r"Cores=(\S+)", line).group(1) for line in gpus] == ["0-71", "0-71", "72-143", "72-143"]  # type: ignore[union-attr]


def test_mixing_block_and_tree_in_one_plan_is_refused(gb200: dict[str, Any]) -> None:
    doc = copy.deepcopy(gb200)
    other = copy.deepcopy(doc["skus"]["gb200-nvl72-4x400g-ib"])
    del other["nvlink_domain"]
    doc["skus"]["plain"] = other
    doc["nodes"][0]["sku"] = "plain"
    with pytest.raises(ValueError, match=r"one topology\.conf cannot be both"):
        render_topology_conf(doc)


@pytest.mark.parametrize("name", sorted(p.stem for p in CLUSTERS.glob("*.yaml") if p.stem != GB200))
def test_other_examples_stay_on_the_tree(name: str) -> None:
    doc = example_plan(name).doc
    assert topology_plugin(doc) == "topology/tree"
    text = render_topology_conf(doc)
    assert "BlockName=" not in text and "SwitchName=" in text
    assert "# slurm.conf: TopologyPlugin=topology/tree." in text
    assert all("nvlink_domain" not in sku for sku in doc["skus"].values())  # their plans did not change


def test_lab_slurm_conf_names_the_block_plugin(gb200: dict[str, Any]) -> None:
    doc = copy.deepcopy(gb200)
    for i, n in enumerate(doc["nodes"]):  # the lab's management network
        n["mgmt_ip"] = f"10.244.0.{11 + i}"
    conf = render_slurm_conf(labplan.parse(doc), Path("/s"), "vm", cpus=2)
    assert "TopologyPlugin=topology/block\n" in conf and "topology/tree" not in conf
    assert "Gres=gpu:gb200:4 " in conf
