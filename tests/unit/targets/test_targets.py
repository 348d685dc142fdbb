"""Deployment targets: the registry picks by the plan's `target`; the lab's inventory variables all come from
one state root (its SSH key, known hosts, munge key and BMC CA together); bare metal adds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge import targets
from clusterforge.errors import ClusterforgeError
from clusterforge.flows.plan import write_outputs
from clusterforge.lab import config
from clusterforge.lab.target import LabTarget
from clusterforge.plan import build_plan
from clusterforge.plan.overrides import InventoryOverrides
from clusterforge.pool.file import FilePool
from clusterforge.pool.managers import UnknownManager, manager_for
from clusterforge.spec import load_spec

REPO = Path(__file__).resolve().parents[3]


def _doc(target: str, **over: Any) -> dict[str, Any]:
    return {"cluster": "c1", "target": target, "pool_manager": "file", "nodes": []} | over


def test_the_registry_picks_the_plans_target() -> None:
    assert targets.for_plan(_doc("lab")).name == "lab"
    assert isinstance(targets.for_plan(_doc("lab")), LabTarget)
    assert targets.for_plan(_doc("baremetal")).name == "baremetal"
    with pytest.raises(ClusterforgeError, match="unknown target 'aws'"):
        targets.for_plan(_doc("aws"))


def test_bare_metal_adds_nothing_and_stands_up_nothing() -> None:
    bm = targets.for_plan(_doc("baremetal"))
    assert bm.inventory_overrides(_doc("baremetal")) == InventoryOverrides()
    assert bm.environment(_doc("baremetal")) == {}
    assert not bm.stands_up_nodes and targets.for_plan(_doc("lab")).stands_up_nodes


def test_lab_inventory_paths_all_follow_its_state_root(tmp_path: Path) -> None:
    """A lab kept elsewhere ($CLUSTERFORGE_LAB_STATE) is reached with the key under *its* root (the inventory
    used to name the default root's key while the CA followed the variable)."""
    got = LabTarget(manager_for, tmp_path).inventory_overrides(_doc("lab"))
    root = f"{tmp_path}/c1"
    assert got.all_vars["ansible_ssh_private_key_file"] == f"{root}/ssh/id_ed25519"
    assert f"UserKnownHostsFile={root}/ssh/known_hosts" in got.all_vars["ansible_ssh_common_args"]
    assert got.all_vars["slurm_node_munge_key_src"] == f"{root}/munge/munge.key"
    assert got.bios_ca_path == f"{root}/bmc/ca.pem"
    assert got.all_vars["slurm_node_conf_server"] == f"{config.HOST_IP}:{config.SLURMCTLD_PORT}"


def test_the_lab_inventory_carries_the_lab_targets_variables(tmp_path: Path) -> None:
    plan = build_plan(load_spec(REPO / "inventory/clusters/lab.yaml"))
    gv = yaml.safe_load((write_outputs(plan, tmp_path, svg=False) / "group_vars" / "all.yml").read_text())
    want = targets.for_plan(plan.doc).inventory_overrides(plan.doc)
    assert {k: gv[k] for k in want.all_vars} == dict(want.all_vars)
    assert gv["bios_ca_path"] == want.bios_ca_path


def test_one_pool_manager_lookup(tmp_path: Path) -> None:
    pm = targets.pool_manager(_doc("baremetal"), registry=tmp_path / "p.json")
    assert isinstance(pm, FilePool)
    with pytest.raises(UnknownManager) as exc:
        targets.pool_manager(_doc("lab"), kind="pbs")
    assert exc.value.exit_code == 2
