"""Stack outputs equal what `clusterforge plan` writes; secrets stay secret; bad config fails clearly."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from google.protobuf import json_format
from pulumi.runtime import rpc
from pulumi_mocks import REPO, RecordingMocks, run_stack, spec_config

from clusterforge.flows.plan import write_outputs
from clusterforge.plan import build_plan
from clusterforge.plan.summary import summary
from clusterforge.pulumi.settings import StackConfigError
from clusterforge.spec import load_spec

BM = "tests/unit/pulumi/fixtures/bm-small.yaml"
PASSWORD = "bmc-pw-do-not-leak-7f3a"


async def engine_view(cluster: Any, outs: dict[str, Any]) -> dict[str, Any]:
    """The outputs as the engine stores them (serialized like `pulumi.export` does), secrets kept apart."""
    plain = {k: v for k, v in outs.items() if not isinstance(v, pulumi.Output)}
    struct = await rpc.serialize_properties(plain, {})
    secret = {k: await v.is_secret() for k, v in outs.items() if isinstance(v, pulumi.Output)}
    return {"plain": json_format.MessageToDict(struct), "secret": secret}


def _ints(x: Any) -> Any:  # protobuf Struct numbers are doubles
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, dict):
        return {k: _ints(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_ints(v) for v in x]
    return x


@pytest.mark.parametrize("spec", ["inventory/clusters/lab.yaml", "inventory/clusters/h100-roce-2su.yaml", BM])
def test_outputs_equal_what_plan_writes(
    stack: Callable[..., RecordingMocks], spec: str, tmp_path: Path
) -> None:
    stack(spec_config(spec, sudo="false", cli="clusterforge"))
    view = run_stack(engine_view).collected
    outs = _ints(view["plain"])

    plan = build_plan(load_spec(REPO / spec))
    dest = write_outputs(plan, tmp_path, svg=False)
    assert outs["inventory"] == yaml.safe_load((dest / "hosts.yml").read_text())
    assert outs["plan_hash"] == json.loads((dest / "plan.json").read_text())["plan_hash"] == plan.plan_hash
    assert outs["cluster"] == plan.name
    on_disk = {p.stem: yaml.safe_load(p.read_text()) for p in (dest / "group_vars").glob("*.yml")}
    assert outs["group_vars"] == on_disk
    assert outs["fabric"] == json.loads(json.dumps(summary(plan)))
    assert set(outs["switch_configs"]) == {f["name"] for f in plan.doc["fabrics"]}
    for f in plan.doc["fabrics"]:
        assert outs["cabling"][f["name"]]["links"] == f["links"]
        if f["type"] == "roce":
            assert set(outs["switch_configs"][f["name"]]["switches"]) == {s[0] for s in f["switches"]}


def test_bmc_password_stays_secret(stack: Callable[..., RecordingMocks]) -> None:
    stack(spec_config(BM, bmcUsername="root", bmcPassword=PASSWORD), secrets=["clusterforge:bmcPassword"])

    async def collect(cluster: Any, outs: dict[str, Any]) -> dict[str, Any]:
        view = await engine_view(cluster, outs)
        node = cluster.nodes["gpu-01"]
        view["node_secret"] = await node.bmc_credentials.is_secret()
        view["creds"] = await outs["bmc_credentials"].future()
        return view

    got = run_stack(collect).collected
    assert got["secret"] == {"bmc_credentials": True} and got["node_secret"]
    assert got["creds"]["gpu-01"] == {"address": "10.10.1.11", "username": "root", "password": PASSWORD}
    plain = json.dumps(got["plain"])
    assert PASSWORD not in plain
    assert "10.10.1.11" in plain  # the BMC address itself is a plain fact (inventory clusterforge_bmc)


def test_no_bmc_output_without_a_password(stack: Callable[..., RecordingMocks]) -> None:
    stack(spec_config(BM))
    assert "bmc_credentials" not in run_stack().outputs


def _fails(stack: Callable[..., RecordingMocks], config: dict[str, str], *needles: str) -> str:
    stack(config)
    with pytest.raises(StackConfigError) as info:
        run_stack()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_missing_spec_config(stack: Callable[..., RecordingMocks]) -> None:
    _fails(stack, {}, "clusterforge:spec", "pulumi config set clusterforge:spec inventory/clusters/")


def test_spec_path_that_does_not_exist(stack: Callable[..., RecordingMocks]) -> None:
    _fails(
        stack,
        spec_config("inventory/clusters/nope.yaml"),
        "clusterforge:spec",
        "nope.yaml",
        "no such file",
        "relative to the repository root",
        "pulumi config set",
    )


def test_invalid_spec(stack: Callable[..., RecordingMocks], tmp_path: Path) -> None:
    text = (REPO / "inventory/clusters/lab.yaml").read_text().replace("count: 2\n", "count: 0\n", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    msg = _fails(stack, spec_config(str(bad)), "clusterforge:spec", "invalid cluster spec", "pools[0].count")
    assert "clusterforge plan" in msg  # how to check the fix


def test_switch_push_without_password(stack: Callable[..., RecordingMocks]) -> None:
    push = '{"nos": "sonic", "user": "admin", "addresses": {"roce0-leaf-su0-r0": "10.0.0.5"}}'
    _fails(stack, spec_config(BM, switchPush=push), "clusterforge:switchPassword", "--secret")


def test_switch_push_malformed(stack: Callable[..., RecordingMocks]) -> None:
    _fails(
        stack,
        spec_config(BM, switchPush='{"nos": "eos"}', switchPassword="x"),
        "clusterforge:switchPush",
        "sonic|cumulus",
    )


def test_sudo_must_be_boolean(stack: Callable[..., RecordingMocks]) -> None:
    _fails(
        stack, spec_config("inventory/clusters/lab.yaml", sudo="maybe"), "clusterforge:sudo", "true or false"
    )
