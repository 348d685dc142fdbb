"""`drift.applied`: a node's live state against its applied state; desired-state changes since the
provision; which nodes are read fast and which need the deep check."""

from __future__ import annotations

import copy
from typing import Any

from clusterforge.drift.applied import compare, desired_changes, fast_or_deep
from clusterforge.plan.digest import sha256_of

STATE: dict[str, Any] = {
    "files": {
        "/etc/sysctl.d/90-clusterforge.conf": {
            "sha256": "a" * 64,
            "mode": "0644",
            "owner": "root",
            "group": "root",
        },
        "/etc/clusterforge/gone-on-purpose": None,
    },
    "packages": {
        "datacenter-gpu-manager-4-core": {"version": "1:4.2.3-1", "hold": True},
        "tuned": {"version": "2.20.0-1", "hold": False},
        "not-there": None,
    },
    "services": {"nvidia-persistenced.service": {"active": "active", "enabled": "enabled"}},
    "modules": {"nvidia_peermem": True},
}
APPLIED = {"state": STATE}


def live(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(STATE)
    for path, value in changes.items():
        kind, _, key = path.partition(":")
        doc[kind][key] = value
    return doc


def settings(items: list[Any]) -> list[tuple[str, str, str]]:
    return [(i.setting, i.expected, i.actual) for i in items]


def test_unchanged_node_has_no_items() -> None:
    assert compare("n1", APPLIED, live()) == []


def test_each_kind_of_change_is_named() -> None:
    conf = "/etc/sysctl.d/90-clusterforge.conf"
    cases = {
        f"files:{conf}": {"sha256": "b" * 64, "mode": "0644", "owner": "root", "group": "root"},
        "packages:datacenter-gpu-manager-4-core": {"version": "1:4.4.1-1", "hold": False},
        "packages:tuned": None,
        "services:nvidia-persistenced.service": {"active": "inactive", "enabled": "enabled"},
        "modules:nvidia_peermem": False,
    }
    got = settings(compare("n1", APPLIED, live(**cases)))
    assert (
        f"file {conf}",
        "content as provisioned (sha256 aaaaaaaaaaaa)",
        "changed (sha256 bbbbbbbbbbbb)",
    ) in got
    assert ("package datacenter-gpu-manager-4-core", "1:4.2.3-1", "1:4.4.1-1") in got
    assert ("package datacenter-gpu-manager-4-core hold", "held", "not held") in got
    assert ("package tuned", "2.20.0-1", "not installed") in got
    assert ("service nvidia-persistenced.service state", "active", "inactive") in got
    assert ("kernel module nvidia_peermem", "loaded", "not loaded") in got
    assert len(got) == 6


def test_files_missing_appearing_and_attributes() -> None:
    conf = "/etc/sysctl.d/90-clusterforge.conf"
    got = settings(
        compare(
            "n1",
            APPLIED,
            live(**{f"files:{conf}": None, "files:/etc/clusterforge/gone-on-purpose": {"sha256": "c" * 64}}),
        )
    )
    assert (f"file {conf}", "sha256 aaaaaaaaaaaa", "missing") in got
    assert ("file /etc/clusterforge/gone-on-purpose", "absent (as provisioned)", "present") in got
    mode = settings(
        compare("n1", APPLIED, live(**{f"files:{conf}": {**STATE["files"][conf], "mode": "0666"}}))
    )
    assert mode == [(f"file {conf} mode", "0644", "0666")]


def test_a_package_absent_at_provision_is_not_drift_when_installed_later() -> None:
    assert compare("n1", APPLIED, live(**{"packages:not-there": {"version": "1", "hold": False}})) == []


def test_a_service_the_read_did_not_return_is_named_unknown() -> None:
    doc = live()
    doc["services"] = {}
    got = settings(compare("n1", APPLIED, doc))
    assert ("service nvidia-persistenced.service state", "active", "unknown") in got


def test_a_boot_time_unit_that_failed_is_drift() -> None:
    """A unit the provision only enabled (a boot-time oneshot such as the QoS script): its running state is
    not compared, but `failed` is drift (the rule the check after a reboot uses too: remote/state_diff.py)."""
    unit = "clusterforge-roce-qos.service"
    state = {**STATE, "services": {unit: {"active": "inactive", "enabled": "enabled"}}}
    applied = {"state": state, "managed": {"services_active": [], "services_enabled": [unit]}}
    ran = copy.deepcopy(state)
    ran["services"][unit]["active"] = "active"  # it ran at boot: as intended
    assert compare("n1", applied, ran) == []
    ran["services"][unit]["active"] = "failed"
    assert settings(compare("n1", applied, ran)) == [(f"service {unit} state", "not failed", "failed")]
    ran["services"][unit]["enabled"] = "disabled"
    assert (f"service {unit} enabled", "enabled", "disabled") in settings(compare("n1", applied, ran))


def test_desired_changes_name_each_setting() -> None:
    old = {"sysctls": {"vm.swappiness": "10"}, "hugepages": {"total": 8}, "rails": [1]}
    new = {"sysctls": {"vm.swappiness": "1"}, "hugepages": {"total": 8}, "rails": [1, 2]}
    got = settings(desired_changes("n1", old, new))
    assert got == [
        ("desired rails", "[1, 2]", "provisioned with [1]"),
        ("desired sysctls.vm.swappiness", "1", "provisioned with 10"),
    ]


def _plan(desired: dict[str, Any], plan_hash: str = "p2") -> dict[str, Any]:
    return {
        "plan_hash": plan_hash,
        "nodes": [{"name": "n1", "desired": desired}, {"name": "n2", "desired": {}}],
    }


def test_fast_only_with_an_applied_state_of_this_plan_and_version() -> None:
    desired = {"thp": "never"}
    rec = {
        "plan_hash": "p2",
        "desired_sha256": sha256_of(desired),
        "desired": desired,
        "version": "1.0",
        **APPLIED,
    }
    split = fast_or_deep(_plan(desired), {"n1": rec, "n2": None}, "1.0")
    assert set(split.fast) == {"n1"} and set(split.deep) == {"n2"} and split.behind == []
    assert "no applied state" in split.deep["n2"]
    other_version = fast_or_deep(_plan(desired), {"n1": rec}, "1.1")
    assert set(other_version.deep) == {"n1"} and "1.0" in other_version.deep["n1"]
    other_plan = fast_or_deep(_plan(desired, "p3"), {"n1": rec}, "1.0")
    assert set(other_plan.deep) == {"n1"} and other_plan.behind == []  # same desired state: not behind


def test_a_node_whose_desired_state_changed_is_behind_the_plan() -> None:
    old, new = {"thp": "never"}, {"thp": "madvise"}
    rec = {"plan_hash": "p1", "desired_sha256": sha256_of(old), "desired": old, "version": "1.0", **APPLIED}
    split = fast_or_deep(_plan(new), {"n1": rec}, "1.0")
    assert set(split.deep) == {"n1"}
    assert settings(split.behind) == [("desired thp", "madvise", "provisioned with never")]
    assert split.behind[0].source == "plan" and "provision" in split.behind[0].fix


def test_only_the_service_attributes_a_task_set_are_compared() -> None:
    unit = "nvidia-persistenced.service"
    applied = {
        "state": STATE,
        "managed": {"services": [unit], "services_enabled": [unit], "services_active": []},
    }
    stopped = live(**{f"services:{unit}": {"active": "inactive", "enabled": "enabled"}})
    assert compare("n1", applied, stopped) == []  # only enabled by the role: started at boot, not by it
    disabled = live(**{f"services:{unit}": {"active": "active", "enabled": "disabled"}})
    assert settings(compare("n1", applied, disabled)) == [(f"service {unit} enabled", "enabled", "disabled")]
    both = {**applied, "managed": {**applied["managed"], "services_active": [unit]}}
    assert settings(compare("n1", both, stopped)) == [(f"service {unit} state", "active", "inactive")]
