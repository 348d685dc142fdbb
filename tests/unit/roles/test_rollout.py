"""site.yml takes serial / max_fail_percentage from the inventory's group_vars/all.yml (or -e).

Three local hosts that all fail preflight (no SKU): with serial 1 and max_fail_percentage 0 the first
batch's failure stops the rollout, so only one host is attempted; with serial 100% all three are.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ._support import PLAYBOOKS, Runner


def _inventory(tmp_path: Path, serial: object, max_fail: int) -> Path:
    (tmp_path / "group_vars").mkdir()
    hosts = {f"n{i}": {"ansible_connection": "local", "clusterforge_rails": []} for i in range(3)}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "group_vars" / "all.yml").write_text(
        yaml.safe_dump(
            {"clusterforge_rollout_serial": serial, "clusterforge_rollout_max_fail_percentage": max_fail}
        )
    )
    return tmp_path / "hosts.yml"


def _attempted(output: str) -> set[str]:
    recap = output[output.rindex("PLAY RECAP") :]
    return {line.split()[0] for line in recap.splitlines()[1:] if ":" in line and "failed=" in line}


def test_serial_and_max_fail_from_inventory(run_ansible: Runner, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, 1, 0)
    res = run_ansible("ansible-playbook", "-i", str(inv), "--check", str(PLAYBOOKS / "site.yml"))
    assert res.rc != 0
    assert _attempted(res.stdout) == {"n0"}, res.stdout[-3000:]


def test_extra_vars_override_the_inventory(run_ansible: Runner, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, 1, 0)
    res = run_ansible(
        "ansible-playbook",
        "-i",
        str(inv),
        "--check",
        "-e",
        "clusterforge_rollout_serial=100%",
        str(PLAYBOOKS / "site.yml"),
    )
    assert res.rc != 0
    assert _attempted(res.stdout) == {"n0", "n1", "n2"}, res.stdout[-3000:]
