"""Every lab node has a BMC (issue 10): the lab spec plans one per node, `Lab` starts and stops them with its
infrastructure and reports a running one as a leftover, and whatever runs Ansible or the validators against
the lab gets the lab BMCs' account from the environment unless the user brought their own. No root needed:
the BMCs here are real sushy-emulator processes on free ports under a temp state root."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge import targets
from clusterforge.lab import bmc, config, net
from clusterforge.lab.bmc.secrets import ensure_account
from clusterforge.lab.lab import Lab, LabError
from clusterforge.plan import Plan, build_plan
from clusterforge.plan.inventory import all_vars, hosts_yml
from clusterforge.pool.managers import manager_for
from clusterforge.run import provision as provision_mod
from clusterforge.run.ansible import HostResult, PlaybookResult, TaskResult
from clusterforge.spec import load_spec_text
from tests.conftest import LAB_SPEC


@pytest.fixture(autouse=True)
def no_user_account(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in bmc.ACCOUNT_VARS:
        monkeypatch.delenv(k, raising=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_lab_spec_gives_every_node_its_own_bmc_at_its_default_address(lab_doc: dict[str, Any]) -> None:
    nodes = lab_doc["nodes"]
    assert [n["bmc"] for n in nodes] == [
        {"address": bmc.default_address(n["ordinal"]), "vendor": "generic"} for n in nodes
    ]
    assert [b.node for b in bmc.plan_bmcs(lab_doc)] == [n["name"] for n in nodes]
    assert len({b.port for b in bmc.plan_bmcs(lab_doc)}) == len(nodes) == 4


def test_lab_inventory_gives_each_node_the_bios_vars_and_the_lab_ca(
    lab_plan: Plan, lab_doc: dict[str, Any]
) -> None:
    plan = lab_plan
    hosts = {h: v for g in hosts_yml(plan)["all"]["children"].values() for h, v in g["hosts"].items() if v}
    assert {h: v["clusterforge_bmc"]["address"] for h, v in hosts.items()} == {
        n["name"]: n["bmc"]["address"] for n in lab_doc["nodes"]
    }
    gv = all_vars(plan, targets.for_plan(lab_doc).inventory_overrides(lab_doc))
    assert set(gv["bios_vendor_maps"]) == {"generic"}
    # the role verifies TLS against the CA that start_bmcs makes under the lab's (default) state root
    assert gv["bios_ca_path"] == str(Lab(lab_doc).root / "bmc" / "ca.pem")
    assert "bios_ca_path" not in all_vars(plan), "the plan alone names no CA: the target does"


def _doc(**over: Any) -> dict[str, Any]:
    return {
        "cluster": "c1",
        "target": "lab",
        "nodes": [{"name": "n1", "bmc": {"address": "127.0.0.1:1"}}],
    } | over


def test_client_env_is_the_lab_account_only_for_a_lab_plan_with_bmcs(tmp_path: Path) -> None:
    assert bmc.client_env(_doc(), {}, tmp_path) == {}, "never started: no account yet"
    creds = ensure_account(tmp_path / "c1" / "bmc")
    got = bmc.client_env(_doc(), {}, tmp_path)
    assert got == {
        "CLUSTERFORGE_BMC_USER": creds["user"],
        "CLUSTERFORGE_BMC_PASSWORD_FILE": str(tmp_path / "c1" / "bmc" / "password"),
    }
    assert creds["password"] not in json.dumps(got)
    assert bmc.client_env(_doc(nodes=[{"name": "n1", "bmc": None}]), {}, tmp_path) == {}
    assert bmc.client_env(_doc(), {"CLUSTERFORGE_BMC_USER": ""}, tmp_path) == got, "empty counts as unset"


@pytest.mark.parametrize("var", bmc.ACCOUNT_VARS)
def test_client_env_never_overrides_or_completes_a_users_account(tmp_path: Path, var: str) -> None:
    ensure_account(tmp_path / "c1" / "bmc")
    assert bmc.client_env(_doc(), {var: "mine"}, tmp_path) == {}


def test_lab_target_environment_reads_the_environment_and_the_lab_state_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "STATE_BASE", tmp_path)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    ensure_account(tmp_path / "c1" / "bmc")
    lab = targets.for_plan(_doc())
    assert set(lab.environment(_doc())) == {"CLUSTERFORGE_BMC_USER", "CLUSTERFORGE_BMC_PASSWORD_FILE"}
    assert targets.for_plan(_doc(target="baremetal")).environment(_doc(target="baremetal")) == {}
    (tmp_path / "c1" / "slurm").mkdir()
    (tmp_path / "c1" / "slurm" / "slurm.conf").write_text("ClusterName=c1\n")
    assert lab.environment(_doc())["SLURM_CONF"] == str(tmp_path / "c1" / "slurm" / "slurm.conf")
    monkeypatch.setenv("SLURM_CONF", "/users/own/slurm.conf")
    monkeypatch.setenv("CLUSTERFORGE_BMC_PASSWORD", "users-own")
    assert lab.environment(_doc()) == {}, "the user's own account and slurm.conf win"


def test_lab_target_pool_manager_reaches_the_lab_slurmctld(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.lab.target import LabTarget

    monkeypatch.delenv("SLURM_CONF", raising=False)
    (tmp_path / "c1" / "slurm").mkdir(parents=True)
    (tmp_path / "c1" / "slurm" / "slurm.conf").write_text("ClusterName=c1\n")
    pool = LabTarget(manager_for, tmp_path).pool_manager(_doc(pool_manager="slurm"))
    assert pool.env["SLURM_CONF"] == str(tmp_path / "c1" / "slurm" / "slurm.conf")


class _Calls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, name: str) -> Any:
        return lambda *a, **kw: self.calls.append((name, a))


def test_lab_starts_its_bmcs_with_the_infra_and_stops_them(
    lab_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Calls()
    monkeypatch.setattr(bmc, "start_bmcs", lambda doc, root: rec.calls.append(("start", (doc, root))) or {})
    monkeypatch.setattr(bmc, "stop_bmcs", rec("stop"))
    lab = Lab(lab_doc, state_base=tmp_path)
    lab._bmcs_up()
    assert rec.calls == [("start", (lab_doc, tmp_path / "lab"))]

    monkeypatch.setattr(lab.slurm, "stop", rec("slurm.stop"))
    monkeypatch.setattr(lab.repo, "stop", rec("repo.stop"))
    monkeypatch.setattr(net, "lab_netns", lambda: ["cf-other-node"])  # bridges stay: not this test's part
    rec.calls.clear()
    lab.infra_down()
    assert [c[0] for c in rec.calls] == ["stop", "slurm.stop", "repo.stop"]
    assert rec.calls[0][1] == (tmp_path / "lab",)

    rec.calls.clear()
    plain = {**lab_doc, "nodes": [{**n, "bmc": None} for n in lab_doc["nodes"]]}
    Lab(plain, state_base=tmp_path)._bmcs_up()
    assert rec.calls == [("stop", (tmp_path / "lab",))], "a plan without BMCs stops those left running"


def test_a_bmc_that_does_not_come_up_is_a_lab_error(
    lab_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(doc: dict[str, Any], root: Path) -> dict[str, str]:
        raise RuntimeError("lab BMC of roce-01 did not come up on https://127.0.0.1:8441:\nAddress in use")

    monkeypatch.setattr(bmc, "start_bmcs", boom)
    with pytest.raises(LabError, match="roce-01 did not come up"):
        Lab(lab_doc, state_base=tmp_path)._bmcs_up()


def test_real_bmcs_idempotent_listed_as_leftovers_until_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = yaml.safe_load(LAB_SPEC.read_text())
    spec["metadata"]["name"] = "unit-bmcs"  # not the lab's names, ports or state: a lab may be running
    for pool in spec["pools"]:
        pool["nodes"] = [
            {"name": pool["naming"].format(index=1), "bmc": {"address": f"127.0.0.1:{_free_port()}"}}
        ]
    doc = build_plan(load_spec_text(yaml.safe_dump(spec), "unit-bmcs.yaml")).doc
    monkeypatch.setattr(net, "links", lambda: {})  # leftovers() without `ip`: only the BMCs matter here
    lab = Lab(doc, state_base=tmp_path)
    try:
        lab._bmcs_up()
        pids = lab._bmc_pids()
        assert set(pids) == {"roce-01", "ib-01"} and all(pids.values())
        lab._bmcs_up()
        assert lab._bmc_pids() == pids, "infra up twice keeps the running BMCs"
        daemons = lab.leftovers()["daemons"]
        assert sorted(d for d in daemons if d.startswith("bmc:")) == sorted(
            f"bmc:{n}={p}" for n, p in pids.items()
        )
        assert lab.status()["infra"]["bmcs"] == pids
        assert set(lab.bmc_env()) == {"CLUSTERFORGE_BMC_USER", "CLUSTERFORGE_BMC_PASSWORD_FILE"}
    finally:
        bmc.stop_bmcs(lab.root)
    assert lab._bmc_pids() == {"roce-01": None, "ib-01": None}
    assert not [d for d in lab.leftovers()["daemons"] if d.startswith("bmc:")]


def test_provision_runs_site_yml_with_the_lab_account(
    lab_plan: Plan, lab_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both site.yml runs of the loop (converge, and converge again after the reboot) get the account."""
    from clusterforge.flows.plan import write_outputs

    inv = write_outputs(lab_plan, tmp_path / "inv", svg=False)
    account = {"CLUSTERFORGE_BMC_USER": "u", "CLUSTERFORGE_BMC_PASSWORD_FILE": "/p"}
    seen: list[tuple[str, Any]] = []
    read = {"n": 0}

    def fake_run(playbook: str, inventory: Path, **kw: Any) -> PlaybookResult:
        seen.append((playbook, kw.get("env")))
        hosts = (kw.get("limit") or "").split(",")
        tasks = []
        if playbook == "pending.yml":
            read["n"] += 1
            if read["n"] == 1:  # the bios role staged a change on roce-01: reboot it once
                tasks = [
                    TaskResult("roce-01", "Read the pending-reboot record", "", "ok", stdout="bios: X=Y")
                ]
        return PlaybookResult(
            playbook, 0, "successful", {h: HostResult(h, ok=1) for h in hosts}, tasks, "", 0.0
        )

    monkeypatch.setattr(provision_mod, "run_playbook", fake_run)
    opts = provision_mod.Options(limit="roce-01")
    report = provision_mod.provision(lab_doc, inv, opts, None, env=account)
    assert report.ok and report.hosts["roce-01"].rebooted
    assert [p for p, _ in seen] == ["site.yml", "pending.yml", "reboot.yml", "site.yml", "pending.yml"]
    assert [env for p, env in seen if p == "site.yml"] == [account, account]


def test_validator_processes_get_the_lab_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.certify.runner import NodeRun, run_node

    monkeypatch.setenv("CLUSTERFORGE_BMC_CA", "/users/own/ca.pem")
    run = NodeRun("n1", tmp_path / "n1.jsonl", 30.0)
    script = 'echo "$CLUSTERFORGE_BMC_USER $CLUSTERFORGE_BMC_PASSWORD_FILE $CLUSTERFORGE_BMC_CA"'
    run_node(
        ["sh", "-c", script], run, env={"CLUSTERFORGE_BMC_USER": "u", "CLUSTERFORGE_BMC_PASSWORD_FILE": "/p"}
    )
    assert (tmp_path / "n1.log").read_text().strip() == "u /p /users/own/ca.pem"
