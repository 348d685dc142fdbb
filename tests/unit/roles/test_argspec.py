"""A bad knob fails the host before any task changes anything, with a message that names the knob.

site.yml's preflight validates every role's meta/argument_specs.yml against the inventory up front;
each role also validates its own knobs when it starts (Ansible's implicit argument spec task).
Runs against localhost (connection local, check mode) with the sample plan inventory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ._support import INVENTORY, PLAYBOOKS, Runner, task_results

LOCAL = ["-e", "ansible_connection=local", "--check"]


def _only_preflight(names: set[str]) -> set[str]:
    """Task names that are neither fact gathering nor preflight tasks (json callback: "role : task")."""
    return {n for n in names if n != "Gathering Facts" and not n.startswith("preflight : ")}


def _site(run_ansible: Runner, *extra: str):
    res = run_ansible(
        "ansible-playbook",
        "-i",
        str(INVENTORY),
        "-l",
        "roce-01",
        *LOCAL,
        *extra,
        str(PLAYBOOKS / "site.yml"),
        json_output=True,
    )
    return res, task_results(res.json())


@pytest.mark.parametrize(
    ("knob", "value", "expected"),
    [
        (
            "os_tuning_governor_missing",
            "bogus",
            "value of os_tuning_governor_missing must be one of: warn, fail, got: bogus",
        ),
        ("nvidia_gpu_driver_source", "tarball", "nvidia_gpu_driver_source must be one of: package, image"),
        ("rdma_cnp_missing", "bogus", "rdma_cnp_missing must be one of"),
        ("nccl_net_gdr_level", "FAR", "nccl_net_gdr_level must be one of"),
        ("rdma_netdev_wait_s", "lots", "rdma_netdev_wait_s"),
    ],
)
def test_bad_knob_fails_in_preflight_before_any_role_task(
    run_ansible: Runner, knob: str, value: str, expected: str
) -> None:
    res, results = _site(run_ansible, "-e", f"{knob}={value}")
    assert res.rc != 0
    failed = [(name, r) for name, _, r in results if r.get("failed")]
    assert failed, res.output[-4000:]
    name, result = failed[0]
    assert name == "preflight : Validate knobs against each role's argument spec"
    assert expected in str(result), result
    assert not _only_preflight({name for name, _, _ in results})
    assert not any(r.get("changed") for _, _, r in results)


def test_role_validates_its_own_knobs_at_start(run_ansible: Runner, tmp_path: Path) -> None:
    playbook = tmp_path / "os_tuning_only.yml"
    playbook.write_text(
        yaml.safe_dump(
            [{"name": "os_tuning alone", "hosts": "localhost", "gather_facts": False, "roles": ["os_tuning"]}]
        )
    )
    res = run_ansible(
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        "--check",
        "-e",
        "os_tuning_governor_missing=sometimes",
        str(playbook),
        env={"ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles")},
        json_output=True,
    )
    assert res.rc != 0
    results = task_results(res.json())
    assert len(results) == 1, [n for n, _, _ in results]
    name, _, result = results[0]
    assert "Validating arguments against arg spec" in name
    assert "os_tuning_governor_missing must be one of: warn, fail, got: sometimes" in result["msg"]


def _desired_software(**software: Any) -> dict[str, Any]:
    """roce-01's clusterforge_desired (the fixture inventory's SKU group) with `software` keys replaced."""
    text = (INVENTORY.parent / "group_vars" / "sku_h100_sxm_8x400g_roce.yml").read_text()
    desired = yaml.safe_load(text)["clusterforge_desired"]
    desired["software"] = {**desired["software"], **software}
    return dict(desired)


def _off_the_plan() -> dict[str, Any]:
    """A desired state whose driver is off its branch and that pins nothing for Debian (roce-01's family)."""
    rhel = _desired_software()["software"]["packages"]["RedHat"]
    off = {"branch": "570", "version": "550.54.15"}
    return _desired_software(nvidia_driver=off, packages={"RedHat": rhel})


def test_preflight_lists_every_problem_in_one_message(run_ansible: Runner) -> None:
    res, results = _site(
        run_ansible,
        "-e",
        '{"preflight_supported_os": {"Ubuntu": ["24.04"]}}',
        "-e",
        json.dumps({"clusterforge_desired": _off_the_plan()}),
    )
    assert res.rc != 0
    failed = [(name, r) for name, _, r in results if r.get("failed")]
    assert [n for n, _ in failed] == ["preflight : Fail the host with every problem found"]
    msg = failed[0][1]["msg"]
    assert "preflight failed on roce-01" in msg
    assert "unsupported OS" in msg and "supported: Ubuntu 24.04" in msg
    assert "driver 550.54.15 is not on branch 570" in msg
    assert "the plan pins no NVIDIA packages for OS family Debian (it has: RedHat)" in msg
    assert "rail netdev(s) missing: enp24s0np0, enp64s0np0" in msg
    assert "management netdev missing: mgmt0" in msg


def test_preflight_rejects_an_unknown_sku(run_ansible: Runner, tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "hosts": {
                        "odd-01": {
                            "ansible_connection": "local",
                            "clusterforge_sku": "h999-sxm",
                            "clusterforge_rails": [],
                            "preflight_check_mgmt_netdev": False,
                        }
                    }
                }
            }
        )
    )
    res = run_ansible(
        "ansible-playbook", "-i", str(inventory), "--check", str(PLAYBOOKS / "site.yml"), json_output=True
    )
    assert res.rc != 0
    msgs = [r.get("msg", "") for _, _, r in task_results(res.json()) if r.get("failed")]
    assert any("unknown SKU h999-sxm: clusterforge_sku_spec is not defined" in m for m in msgs), msgs
