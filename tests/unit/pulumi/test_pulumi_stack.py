"""The cluster stack under Pulumi's mocks: resources, names and parents match the plan for 1, 4 and 16 SUs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from pulumi.runtime import rpc
from pulumi_mocks import REPO, RecordingMocks, run_stack, spec_config

from clusterforge.plan import build_plan
from clusterforge.spec import load_spec
from tests.conftest import example_plan

T = "clusterforge:index:"


@pytest.mark.parametrize(
    ("spec", "nodes", "switches"),
    [
        ("h100-ib-1su", 32, {"leaf": 8, "spine": 4, "core": 0}),
        ("h100-ib-4su", 128, {"leaf": 32, "spine": 16, "core": 0}),
        ("b200-ib-16su", 512, {"leaf": 128, "spine": 128, "core": 64}),
    ],
)
def test_resources_match_the_plan(
    stack: Callable[..., RecordingMocks], spec: str, nodes: int, switches: dict[str, int]
) -> None:
    mocks = stack(spec_config(f"inventory/clusters/{spec}.yaml"), name=spec)
    run_stack()
    plan = example_plan(spec)

    counts = Counter(r.typ for r in mocks.resources)
    assert counts[T + "GpuCluster"] == 1
    assert counts[T + "GpuNode"] == nodes == len(plan.doc["nodes"])
    assert counts[T + "NodePool"] == len(plan.doc["pools"])
    assert counts[T + "ComputeFabric"] == len(plan.doc["fabrics"]) == 1
    assert counts[T + "ManagementNetwork"] == counts[T + "StorageNetwork"] == 1
    assert not [r for r in mocks.resources if r.custom]  # bare metal: records facts, creates nothing

    # one FabricSwitch per switch of the plan, same names, and as many of each role as the fat tree has
    fabric = plan.doc["fabrics"][0]
    roles = {row[0]: row[1] for row in fabric["switches"]}
    got = {r.name for r in mocks.of_type(T + "FabricSwitch")}
    assert got == set(roles)
    assert dict(Counter(roles[n] for n in got)) == {k: v for k, v in switches.items() if v}
    assert fabric["switches_count"] == switches

    # parents: cluster <- pool <- node, cluster <- fabric <- switch, cluster <- networks
    by_urn = mocks.by_urn()
    cluster = mocks.of_type(T + "GpuCluster")[0]
    assert cluster.name == plan.name and cluster.parent.endswith("pulumi:pulumi:Stack::clusterforge-" + spec)
    pool_of = {n["name"]: n["pool"] for n in plan.doc["nodes"]}
    for node in mocks.of_type(T + "GpuNode"):
        pool = by_urn[node.parent]
        assert (pool.typ, pool.name) == (T + "NodePool", pool_of[node.name])
        assert pool.parent == cluster.urn
    for sw in mocks.of_type(T + "FabricSwitch"):
        fab = by_urn[sw.parent]
        assert (fab.typ, fab.name, fab.parent) == (T + "ComputeFabric", fabric["name"], cluster.urn)
    for typ in ("ManagementNetwork", "StorageNetwork", "ComputeFabric", "NodePool"):
        assert all(r.parent == cluster.urn for r in mocks.of_type(T + typ))
    assert {r.name for r in mocks.of_type(T + "GpuNode")} == {n["name"] for n in plan.doc["nodes"]}


def test_roce_switch_push_is_a_child_command_with_a_secret_password(
    stack: Callable[..., RecordingMocks],
) -> None:
    push = '{"nos": "cumulus", "user": "cumulus", "addresses": {"roce0-leaf-su0-r0": "10.10.3.1"}}'
    mocks = stack(
        spec_config(
            "tests/unit/pulumi/fixtures/bm-small.yaml", switchPush=push, switchPassword="sw-secret-42"
        ),
        secrets=["clusterforge:switchPassword"],
    )

    async def collect(cluster: object, outs: dict[str, object]) -> tuple[bool, str]:
        cmd = cluster.fabrics["roce0"].switches["roce0-leaf-su0-r0"].push  # type: ignore[attr-defined]
        return await cmd.connection.is_secret(), await cmd.stdin.future()

    run = run_stack(collect)
    secret, stdin = run.collected
    cmds = mocks.of_type("command:remote:Command")
    assert [c.name for c in cmds] == ["roce0-leaf-su0-r0-qos"]
    assert mocks.parent_of(cmds[0]).name == "roce0-leaf-su0-r0"  # type: ignore[union-attr]
    # the engine receives the whole connection wrapped as a secret value
    conn = cmds[0].inputs["connection"]
    assert conn[rpc._special_sig_key] == rpc._special_secret_sig
    assert conn["value"]["host"] == "10.10.3.1" and conn["value"]["password"] == "sw-secret-42"
    assert "nv config patch" in cmds[0].inputs["create"]
    assert "qos:" in stdin and "'26':" in stdin
    assert secret, "the switch password must stay a secret inside the connection"


def test_bare_metal_nodes_record_the_declared_facts(stack: Callable[..., RecordingMocks]) -> None:
    mocks = stack(
        spec_config("tests/unit/pulumi/fixtures/bm-small.yaml", bmcUsername="root", bmcPassword="pw-9"),
        secrets=["clusterforge:bmcPassword"],
    )
    run_stack()
    gpu01 = mocks.outputs_of(T + "GpuNode", "gpu-01")
    # from the spec's pools[].nodes[] entry: management IP, MAC and BMC as declared
    assert (gpu01["mgmt_ip"], gpu01["mgmt_mac"]) == ("10.10.0.21", "0c:42:a1:00:00:01")
    assert gpu01["bmc"] == {"address": "10.10.1.11", "vendor": "dell"}
    assert gpu01["target"] == "baremetal" and len(gpu01["rails"]) == 8
    plan = build_plan(load_spec(REPO / "tests/unit/pulumi/fixtures/bm-small.yaml"))
    assert gpu01["expectation_digest"] == plan.node("gpu-01")["expectation_digest"]
    creds = gpu01["bmc_credentials"]  # the engine receives it wrapped as a secret
    assert creds[rpc._special_sig_key] == rpc._special_secret_sig
    assert creds["value"] == {"address": "10.10.1.11", "username": "root", "password": "pw-9"}
    assert "pw-9" not in str({k: v for k, v in gpu01.items() if k != "bmc_credentials"})

    mgmt = mocks.outputs_of(T + "ManagementNetwork", "bm-small-mgmt")
    assert mgmt["addresses"] == {"gpu-01": "10.10.0.21", "gpu-02": plan.node("gpu-02")["mgmt_ip"]}
    fabric = mocks.outputs_of(T + "ComputeFabric", "roce0")
    assert fabric["qos"]["host"]["dscp"] == 26 and fabric["switches_count"] == {
        "leaf": 8,
        "spine": 2,
        "core": 0,
    }
    leaf = mocks.outputs_of(T + "FabricSwitch", "roce0-leaf-su0-r0")
    assert leaf["role"] == "leaf" and len(leaf["config_digest"]) == 64
