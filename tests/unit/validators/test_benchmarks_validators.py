"""validators/test_benchmarks.py: the benchmark tools at their pins, per install method; a missing tool is
`error` naming the role and tag that install it, never `fail`."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect
from tests.conftest import REPO

from .conftest import FakeNode, validator

bench = validator("benchmarks")

DPKG_OK = (
    "libnccl2\t2.26.2-1+cuda12.8\thi \nnccl-tests\t2.14.1-1\thi \nnvbandwidth\t0.8-1\thi \n"
    "rdma-core\t44.0-2\tii \n"
)
WHICH_PKG = "all_reduce_perf\t/usr/bin/all_reduce_perf\nnvbandwidth\t/usr/bin/nvbandwidth\n"


def node_with(node: NodeExpect, **pins: dict[str, Any]) -> NodeExpect:
    """``node`` with other benchmark pins in its desired state (the only place validators read them)."""
    sw = node.desired_state["software"]
    software = {**sw, "benchmarks": {**sw["benchmarks"], **pins}}
    return dataclasses.replace(node, desired_state={**node.desired_state, "software": software})


def fake(which: str = WHICH_PKG, dpkg: str = DPKG_OK) -> FakeNode:
    return FakeNode({bench.WHICH: (0, which), bench.DPKG: (0, dpkg)})


def test_the_plan_pins_both_tools_as_packages(ib_node: NodeExpect) -> None:
    assert ib_node.pins["benchmarks"]["nccl_tests"] == {
        "version": "2.14.1",
        "install": "package",
        "package": "nccl-tests",
        "url": None,
        "sha256": None,
    }
    assert ib_node.pins["benchmarks"]["nvbandwidth"]["version"] == "0.8"


@pytest.mark.parametrize("tool", ["nccl_tests", "nvbandwidth"])
def test_packages_at_the_pins_pass(ib_node: NodeExpect, tool: str) -> None:
    bench.test_tool(ib_node, fake(), tool)


def test_a_package_at_another_version_fails(ib_node: NodeExpect) -> None:
    with pytest.raises(
        CheckFailed, match=r"nvbandwidth package nvbandwidth: expected 0.8; found 0.7-1\. Fix: "
    ):
        bench.test_tool(ib_node, fake(dpkg=DPKG_OK.replace("0.8-1", "0.7-1")), "nvbandwidth")
    with pytest.raises(CheckFailed, match=r"expected 2.14.1; found not installed"):
        bench.test_tool(ib_node, fake(dpkg=DPKG_OK.replace("nccl-tests", "nccl-tests-x")), "nccl_tests")


def test_a_missing_tool_is_an_error_naming_the_role_and_tag(ib_node: NodeExpect) -> None:
    node = fake(which="all_reduce_perf\t/usr/bin/all_reduce_perf\nnvbandwidth\t-\n")
    with pytest.raises(CheckError) as err:
        bench.test_tool(ib_node, node, "nvbandwidth")
    assert not isinstance(err.value, AssertionError)
    msg = str(err.value)
    assert msg.startswith("cannot certify: nvbandwidth missing (nvbandwidth 0.8, install package")
    assert "clusterforge provision --tags benchmarks --limit ib-01` (role benchmarks)" in msg
    bench.test_tool(ib_node, node, "nccl_tests")  # the other tool still passes


def test_unrecognised_output_is_an_error(ib_node: NodeExpect) -> None:
    with pytest.raises(CheckError, match="not recognised"):
        bench.test_tool(ib_node, fake(which="all_reduce_perf\t/usr/bin/all_reduce_perf\n"), "nccl_tests")


def test_a_site_package_name_from_the_spec(ib_node: NodeExpect) -> None:
    node = node_with(ib_node, nccl_tests={"version": "2.14.1", "install": "package", "package": "acme-nccl"})
    with pytest.raises(
        CheckFailed, match=r"nccl-tests package acme-nccl: expected 2\.14\.1; found not installed"
    ):
        bench.test_tool(node, fake(), "nccl_tests")
    bench.test_tool(node, fake(dpkg=DPKG_OK.replace("nccl-tests\t", "acme-nccl\t")), "nccl_tests")


def test_package_install_with_a_stale_link_on_path_fails(ib_node: NodeExpect) -> None:
    which = WHICH_PKG.replace(
        "/usr/bin/nvbandwidth", "/opt/clusterforge/benchmarks/nvbandwidth-0.8/bin/nvbandwidth"
    )
    with pytest.raises(CheckFailed, match=r"nvbandwidth on PATH: expected the binary of package nvbandwidth"):
        bench.test_tool(ib_node, fake(which=which), "nvbandwidth")


@pytest.mark.parametrize("method", ["artifact", "source"])
def test_artifact_and_source_installs_resolve_into_the_versioned_prefix(
    ib_node: NodeExpect, method: str
) -> None:
    node = node_with(ib_node, nccl_tests={"version": "2.15.0", "install": method})
    good = (
        "all_reduce_perf\t/opt/clusterforge/benchmarks/nccl-tests-2.15.0/bin/all_reduce_perf\n"
        "nvbandwidth\t-\n"
    )
    bench.test_tool(node, fake(which=good, dpkg="rdma-core\t44.0-2\tii \n"), "nccl_tests")
    with pytest.raises(CheckFailed, match=rf"all_reduce_perf on PATH \({method}\): expected "):
        bench.test_tool(node, fake(which=good.replace("2.15.0", "2.14.1")), "nccl_tests")
    with pytest.raises(CheckFailed, match="found /usr/bin/all_reduce_perf"):
        bench.test_tool(node, fake(), "nccl_tests")
    moved = dataclasses.replace(node, knobs={"benchmarks_prefix": "/srv/bench/"})
    bench.test_tool(
        moved, fake(which=good.replace("/opt/clusterforge/benchmarks", "/srv/bench")), "nccl_tests"
    )


def test_a_plan_without_the_pin_is_an_error(ib_node: NodeExpect) -> None:
    sw = ib_node.desired_state["software"]
    benchmarks = {k: v for k, v in sw["benchmarks"].items() if k != "nvbandwidth"}
    desired = {**ib_node.desired_state, "software": {**sw, "benchmarks": benchmarks}}
    with pytest.raises(CheckError, match=r"no software\.nvbandwidth pin"):
        bench.test_tool(dataclasses.replace(ib_node, desired_state=desired), fake(), "nvbandwidth")


def test_the_check_knows_the_role_defaults() -> None:
    defaults = yaml.safe_load((REPO / "playbooks/roles/benchmarks/defaults/main.yml").read_text())
    assert defaults["benchmarks_prefix"] == bench.PREFIX
    for tool, t in bench.TOOLS.items():
        assert t.binary in defaults[f"benchmarks_{tool}_binaries"]
    role_vars = yaml.safe_load((REPO / "playbooks/roles/benchmarks/vars/main.yml").read_text())
    dirs = {e["name"]: e["dir"] for e in role_vars["_benchmarks_tools"]}
    assert dirs == {k: t.dir for k, t in bench.TOOLS.items()}
