"""The lab stack's node command strings, run for real: `delete` takes ONE node down, `create` brings it back.

The strings are the ones the `lab` stack hands to `command.local.Command` (recorded from the program under
Pulumi's mocks), executed the way pulumi-command runs them (`/bin/sh -c` in `dir`). The shared session lab
(tests/integration/conftest.py) is restored afterwards even if an assertion fails.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pulumi
import pytest
from pulumi.runtime.settings import ROOT

from tests.conftest import REPO

pytestmark = pytest.mark.lab

SPEC = "inventory/clusters/lab.yaml"
LAB_KEYS = ("mgmt_ip", "mgmt_mac", "mgmt_netdev", "fabric", "pool")
RAIL_KEYS = ("netdev", "mac", "ip", "prefix", "mtu")


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.inputs: dict[str, dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.inputs[args.name] = dict(args.inputs)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


def recorded_commands() -> tuple[Any, dict[str, dict[str, Any]]]:
    """Run the stack program for the lab spec under mocks; the plan and every resource's inputs."""
    from clusterforge.pulumi.program import build
    from clusterforge.pulumi.settings import load_settings, plan_from_settings

    mocks = _Mocks()
    ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project="clusterforge", stack="lab", preview=False)
    pulumi.runtime.set_all_config({"clusterforge:spec": SPEC, "clusterforge:sudo": "false"})
    try:
        pulumi.runtime.test(lambda: build(REPO)[0].urn)()
        plan = plan_from_settings(load_settings(REPO))
    finally:
        pulumi.runtime.set_all_config({}, [])
    return plan, mocks.inputs


def _facts(raw: dict[str, Any]) -> tuple[Any, ...]:
    return (
        *(raw.get(k) for k in LAB_KEYS),
        [tuple(r.get(k) for k in RAIL_KEYS) for r in raw.get("rails", [])],
    )


def _sh(cmd: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=300)


def _ssh_hostname(lab: Any, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lab.ssh_argv(name, "hostname"), capture_output=True, text=True, timeout=30)


def test_node_delete_then_create_string(lab: Any) -> None:
    plan, inputs = recorded_commands()
    if lab.cluster != plan.name:
        pytest.skip(f"session lab is cluster {lab.cluster!r}, the lab stack plans {plan.name!r}")
    stack_nodes = {n["name"]: n for n in plan.doc["nodes"]}
    same = [
        n.name
        for n in lab.plan.nodes
        if n.name in stack_nodes and _facts(n.raw) == _facts(stack_nodes[n.name])
    ]
    if not same:
        pytest.skip("no node of the session lab has the same addresses as the lab spec's plan")
    name = same[0]
    cmd = inputs[f"{name}-lab"]
    assert cmd["create"].endswith(f"lab node up {SPEC} {name}")
    before = _ssh_hostname(lab, name)
    assert before.stdout.strip() == name, f"{name} not reachable before the test: {before.stderr}"

    try:
        down = _sh(cmd["delete"], cmd["dir"])
        assert down.returncode == 0, down.stderr
        assert lab.status()["nodes"][name]["state"] in ("stopped", "absent")
        assert not lab.healthy(name)
        assert _ssh_hostname(lab, name).returncode != 0, "SSH still answers after the delete command"

        up = _sh(cmd["create"], cmd["dir"])
        assert up.returncode == 0, up.stderr
        lab.wait_ssh([name], timeout=120)
        after = _ssh_hostname(lab, name)
        assert after.stdout.strip() == name, f"{name} not back after the create command: {after.stderr}"
        assert lab.healthy(name)
    finally:
        if not lab.healthy(name):  # leave the shared lab as we found it
            lab.node_up(name, wait=True, timeout=180)
