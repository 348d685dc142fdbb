"""validators/test_monitoring.py: exporters that answer with the plan's series pass; one that does not answer,
or lacks a field, fails; the health check must run and name the node."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckFailed
from clusterforge.lab.sim.dcgm_exporter import render
from clusterforge.lab.sim.state import initial_state
from clusterforge.plan.expect import NodeExpect
from tests.conftest import example_plan

from .conftest import FakeNode, validator

mon = validator("monitoring")

NODE_METRICS = "# HELP node_textfile_scrape_error 1 if there was an error\nnode_textfile_scrape_error 0\n"


def _dcgm_text() -> str:
    plan = example_plan("lab").doc
    return render(initial_state(plan, "ib-01"), "570.133.20", "ib-01")


def fake(node_text: str = NODE_METRICS, dcgm_text: str | None = None) -> FakeNode:
    return FakeNode({mon.fetch(9100): (0, node_text), mon.fetch(9400): (0, dcgm_text or _dcgm_text())})


def test_exporters_with_the_plans_series_pass(ib_node: NodeExpect) -> None:
    mon.test_exporter(ib_node, fake(), "node")
    mon.test_exporter(ib_node, fake(), "dcgm")  # the lab's simulated dcgm-exporter serves every field


def test_an_exporter_that_does_not_answer_fails(ib_node: NodeExpect) -> None:
    down = fake(node_text="DOWN <urlopen error [Errno 111] Connection refused>\n")
    with pytest.raises(CheckFailed, match="node exporter on :9100"):
        mon.test_exporter(ib_node, down, "node")


def test_textfile_collector_off_fails(ib_node: NodeExpect) -> None:
    with pytest.raises(CheckFailed, match="textfile collector"):
        mon.test_exporter(ib_node, fake(node_text="node_load1 0.1\n"), "node")


def test_a_missing_dcgm_field_fails(ib_node: NodeExpect) -> None:
    text = "\n".join(line for line in _dcgm_text().splitlines() if "ROW_REMAP_PENDING" not in line)
    with pytest.raises(CheckFailed, match="DCGM_FI_DEV_ROW_REMAP_PENDING"):
        mon.test_exporter(ib_node, fake(dcgm_text=text), "dcgm")


def test_health_check_runs(ib_node: NodeExpect) -> None:
    h = ib_node.desired["monitoring"]["health"]
    cmd = mon.argv(  # the program itself, as Slurm's HealthCheckProgram runs it
        h["path"],
        "--config",
        h["config"],
        "--pool",
        "none",
        "--node",
        "ib-01",
        "--state-dir",
        mon.SCRATCH,
    )
    mon.test_health_check(ib_node, FakeNode({cmd: (1, "ib-01: drain: clusterforge: passive.gpu_lost ...\n")}))
    with pytest.raises(CheckFailed, match="health check"):
        mon.test_health_check(ib_node, FakeNode({cmd: (0, "Traceback ...\n")}))
