"""Lab target: the infra and per-node `command.local.Command`s, their strings, triggers and ordering."""

from __future__ import annotations

from collections.abc import Callable

from pulumi_mocks import REPO, RecordingMocks, run_stack, spec_config

from clusterforge.plan import Plan
from clusterforge.pulumi.lab import infra_digest

LAB = "inventory/clusters/lab.yaml"
CLI = "/opt/cf venv/bin/clusterforge"  # a space: the strings must quote it


def test_lab_commands(stack: Callable[..., RecordingMocks], lab_plan: Plan) -> None:
    mocks = stack(spec_config(LAB, cli=CLI, sudo="false"), name="lab")
    run_stack()
    plan = lab_plan
    cmds = {c.name: c for c in mocks.of_type("command:local:Command")}
    assert set(cmds) == {"lab-lab-infra"} | {f"{n['name']}-lab" for n in plan.doc["nodes"]}

    infra = cmds["lab-lab-infra"]
    q = "'/opt/cf venv/bin/clusterforge'"
    assert infra.inputs["create"] == f"{q} lab infra up {LAB}"
    assert infra.inputs["delete"] == f"{q} lab infra down {LAB}"
    assert infra.inputs["dir"] == str(REPO)
    assert infra.inputs["triggers"] == [infra_digest(plan.doc)]
    assert infra.delete_before_replace
    assert mocks.parent_of(infra).typ == "clusterforge:index:GpuCluster"  # type: ignore[union-attr]

    for node in plan.doc["nodes"]:
        c = cmds[f"{node['name']}-lab"]
        assert c.inputs["create"] == f"{q} lab node up {LAB} {node['name']}"
        assert c.inputs["delete"] == f"{q} lab node down {LAB} {node['name']}"
        assert c.inputs["dir"] == str(REPO)
        assert c.inputs["triggers"] == [node["expectation_digest"]]
        assert c.dependencies == [infra.urn], "a node boots only after the lab infrastructure"
        assert c.delete_before_replace, "replacing must stop the old node before booting the new one"
        parent = mocks.parent_of(c)
        assert parent is not None and (parent.typ, parent.name) == (
            "clusterforge:index:GpuNode",
            node["name"],
        )


def test_sudo_prefix(stack: Callable[..., RecordingMocks]) -> None:
    mocks = stack(spec_config(LAB, cli="clusterforge", sudo="true"), name="lab")
    run_stack()
    for c in mocks.of_type("command:local:Command"):
        assert c.inputs["create"].startswith("sudo -n clusterforge lab ")
        assert c.inputs["delete"].startswith("sudo -n clusterforge lab ")


def test_bare_metal_has_no_commands(stack: Callable[..., RecordingMocks]) -> None:
    mocks = stack(spec_config("inventory/clusters/h100-roce-2su.yaml"))
    run_stack()
    assert not mocks.of_type("command:local:Command")


def test_infra_digest_ignores_nodes_but_not_networks(lab_plan: Plan) -> None:
    doc = lab_plan.doc
    same = {**doc, "nodes": doc["nodes"][:1], "plan_hash": "x"}
    assert infra_digest(same) == infra_digest(doc)
    moved = {**doc, "networks": {**doc["networks"], "management": {"cidr": "10.9.0.0/24"}}}
    assert infra_digest(moved) != infra_digest(doc)
