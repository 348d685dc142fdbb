"""Fixtures of tests/integration/bios (see bios_rig.py): the BMC rig for the session (its account
in the environment for this folder's tests only), fresh BMCs per test."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from bios_rig import BMC_NODES, Rig, free_port

from clusterforge.flows.plan import write_outputs
from clusterforge.lab.bmc import bmc_env, start_bmcs, stop_bmcs
from clusterforge.plan import bios_vars
from clusterforge.plan.build import build_plan
from clusterforge.spec.load import load_spec_text
from tests.conftest import LAB_SPEC


@pytest.fixture(scope="session")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    tmp = tmp_path_factory.mktemp("bios")
    spec = yaml.safe_load(LAB_SPEC.read_text())
    for pool in spec["pools"]:
        pool.pop("nodes", None)
        if pool["name"] == "roce":
            pool["nodes"] = [
                {"name": n, "bmc": {"address": f"127.0.0.1:{free_port()}", "vendor": "generic"}}
                for n in BMC_NODES
            ]
    plan = build_plan(load_spec_text(yaml.safe_dump(spec), "lab-with-bmcs.yaml"))
    inventory = write_outputs(plan, tmp / "inventory", svg=False)
    all_yml = inventory / "group_vars" / "all.yml"
    gv = yaml.safe_load(all_yml.read_text())
    all_yml.write_text(yaml.safe_dump({**bios_vars.all_vars(plan.doc), **gv}))
    (tmp / "nodes").mkdir()
    state = tmp / "state"
    urls = start_bmcs(plan.doc, state, hooks=False)
    creds = json.loads((state / "bmc" / "credentials.json").read_text())
    try:
        yield Rig(tmp, inventory, plan.doc, urls, state / "bmc" / "ca.pem", creds)
    finally:
        stop_bmcs(state)


@pytest.fixture(autouse=True)
def rig_account(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rig's BMC account in the environment for each test of this folder only (a session-wide one would
    reach the lab tests, whose own lab BMCs have another account)."""
    monkeypatch.delenv("CLUSTERFORGE_BMC_PASSWORD", raising=False)
    for k, v in bmc_env(rig.tmp / "state").items():  # user + password *file*: Ansible and the validator
        monkeypatch.setenv(k, v)


@pytest.fixture
def fresh(rig: Rig) -> Rig:
    """Both BMCs at factory BIOS defaults, nothing staged, no pending-reboot record."""
    for n in BMC_NODES:
        rig.factory(n)
    return rig
