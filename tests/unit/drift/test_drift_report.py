"""Drift items from check-mode results, and the report formats a CI job consumes."""

import json
import xml.etree.ElementTree as ET

from clusterforge.drift import formats
from clusterforge.drift.ansible_diff import items_from_check_run
from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.run.ansible import HostResult, PlaybookResult, TaskResult


def _res(tasks):
    return PlaybookResult(
        "site.yml", 0, "successful", {"n1": HostResult("n1"), "n2": HostResult("n2")}, tasks, "/tmp/x", 1.0
    )


def test_changed_task_becomes_item_with_before_and_after():
    diff = [
        {
            "before": "vm.swappiness = 60\nkernel.numa_balancing = 1\n",
            "after": "vm.swappiness = 60\nkernel.numa_balancing = 0\n",
            "before_header": "/etc/sysctl.d/90-clusterforge.conf",
        }
    ]
    items = items_from_check_run(
        _res(
            [
                TaskResult("n1", "Set sysctls", "os_tuning", "changed", diff=diff),
                TaskResult("n2", "Set sysctls", "os_tuning", "ok"),
            ]
        )
    )
    assert items == [
        DriftItem(
            "n1",
            "Set sysctls",
            "kernel.numa_balancing = 0",
            "kernel.numa_balancing = 1",
            "role os_tuning: Set sysctls",
            fix="clusterforge provision --limit n1 (role os_tuning) or clusterforge drift --fix",
        )
    ]


def test_drift_on_one_node_never_hides_drift_on_another():
    r = DriftReport("lab", "a" * 64, ["n1", "n2", "n3"])
    r.items = [
        DriftItem("n1", "mtu", "9000", "1500", "validator rdma.mtu"),
        DriftItem("n3", "pfc", "3", "none", "validator rdma.pfc"),
    ]
    text = formats.text(r)
    assert "DRIFT  n1" in text and "DRIFT  n3" in text and "OK     n2" in text
    assert "expected 9000; actual 1500" in text
    doc = json.loads(formats.as_json(r))
    assert {i["node"] for i in doc["items"]} == {"n1", "n3"}
    suite = ET.fromstring(formats.junit(r))
    assert suite.get("failures") == "2" and len(suite.findall("testcase")) == 3
    md = formats.markdown(r)
    assert "| n1 | mtu | 9000 | 1500 |" in md and "drift found" in md


def test_unreachable_is_drift_unless_allowed():
    r = DriftReport("lab", "b" * 64, ["n1"])
    r.items = [DriftItem("n1", "reachability", "reachable over SSH", "unreachable", "ansible")]
    assert r.drifted() is True
    assert r.drifted(allow_unreachable=True) is False
    assert "no drift" in formats.text(r, allow_unreachable=True)


def test_junit_counts_tool_errors_as_tests():
    """JUnit readers check tests >= failures + errors: a tool error is a testcase and counts in `tests`."""
    r = DriftReport("lab", "c" * 64, ["n1", "n2"])
    r.items = [DriftItem("n1", "mtu", "9000", "1500", "validator rdma.mtu")]
    r.errors = ["site.yml: not run (ansible-playbook rc 1)"]
    suite = ET.fromstring(formats.junit(r))
    assert len(suite.findall("testcase")) == int(suite.get("tests")) == 3
    assert (suite.get("failures"), suite.get("errors")) == ("1", "1")
