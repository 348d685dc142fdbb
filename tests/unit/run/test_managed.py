"""`run.managed`: what a provision manages, read from the task results of a real lab provision."""

from __future__ import annotations

import json
from pathlib import Path

from clusterforge.run.managed import Managed, from_result, package_name

EVENTS = Path(__file__).parents[2] / "fixtures" / "ansible" / "provision-roce-01-events.json"


def _all() -> Managed:
    out = Managed()
    for e in json.loads(EVENTS.read_text())["events"]:
        out.add(from_result(e["task_action"], e["res"]))
    return out


def test_files_packages_and_services_of_a_real_provision() -> None:
    m = _all()
    # template and copy destinations, one per loop item too
    assert any(p.startswith("/etc/systemd/network/60-clusterforge-") for p in m.files)
    assert "/etc/slurm/gres.conf" in m.files and "/etc/slurm/topology.conf" in m.files
    assert all(p.startswith("/") for p in m.files)
    # apt pins stripped to the package; dpkg_selections holds counted
    assert "datacenter-gpu-manager-4-core" in m.packages and "libnccl2" in m.packages
    assert not any(c in p for p in m.packages for c in "=*<> ")
    # systemd_service names, with the unit suffix systemctl shows
    assert {"chrony.service", "tuned.service", "clusterforge-os-tuning.service"} <= m.services
    assert all(s.endswith(".service") for s in m.services)


def test_command_and_directory_tasks_name_nothing() -> None:
    for e in json.loads(EVENTS.read_text())["events"]:
        if e["task_action"].endswith((".command", ".file")):
            assert not from_result(e["task_action"], e["res"]), e["task"]


def test_skipped_and_failed_items_name_nothing() -> None:
    res = {
        "results": [
            {"skipped": True, "dest": "/etc/a"},
            {"failed": True, "dest": "/etc/b"},
            {"dest": "/etc/c", "changed": False},
        ]
    }
    assert from_result("ansible.builtin.template", res).files == {"/etc/c"}


def test_removed_packages_and_modules_are_not_managed_as_present() -> None:
    absent = {"invocation": {"module_args": {"name": ["x"], "state": "absent"}}}
    assert not from_result("ansible.builtin.apt", absent)
    assert not from_result("community.general.modprobe", absent)
    loaded = {"invocation": {"module_args": {"name": "nvidia_peermem", "state": "present"}}}
    assert from_result("community.general.modprobe", loaded).modules == {"nvidia_peermem"}


def test_package_names() -> None:
    assert package_name("libnccl2=2.26.2-1+cuda12.8") == "libnccl2"
    assert package_name("nvidia-driver-570=570.133.20*") == "nvidia-driver-570"
    assert package_name("slurm-client") == "slurm-client"
    assert package_name("/tmp/x.deb") is None and package_name("@development") is None


def test_round_trip() -> None:
    m = _all()
    assert Managed.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_service_attributes_each_task_sets() -> None:
    started = {"invocation": {"module_args": {"name": "slurmd", "state": "started", "enabled": None}}}
    enabled = {"invocation": {"module_args": {"name": "acs.service", "state": None, "enabled": True}}}
    m = from_result("ansible.builtin.systemd_service", started)
    m.add(from_result("ansible.builtin.systemd_service", enabled))
    assert m.services == {"slurmd.service", "acs.service"}
    assert m.services_active == {"slurmd.service"} and m.services_enabled == {"acs.service"}
