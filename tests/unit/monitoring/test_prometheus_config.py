"""prometheus.yml from the plan: every node's exporters at their desired ports; promtool accepts it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from clusterforge.plan.prometheus_config import render
from tests.conftest import REPO, example_plan
from tests.unit.monitoring.test_monitoring import need_promtool

RULES = REPO / "monitoring" / "alerts" / "clusterforge.rules.yml"


def test_every_node_and_exporter_is_scraped() -> None:
    plan = example_plan("lab").doc
    doc = yaml.safe_load(render(plan, clusterforge_exporter="10.244.0.1:9469"))
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    assert set(jobs) == {"node", "dcgm", "clusterforge"}
    for job, key in (("node", "node_exporter"), ("dcgm", "dcgm_exporter")):
        targets = {c["labels"]["instance"]: c["targets"] for c in jobs[job]["static_configs"]}
        for n in plan["nodes"]:
            port = n["desired"]["monitoring"][key]["port"]
            assert targets[f"{n['name']}:{port}"] == [f"{n['mgmt_ip']}:{port}"]
        assert len(targets) == len(plan["nodes"])
    assert all("node" not in c["labels"] for c in jobs["node"]["static_configs"])
    assert doc["global"]["external_labels"] == {"cluster": plan["cluster"]}


def test_promtool_checks_the_config(tmp_path: Path) -> None:
    tool = need_promtool()
    rules = tmp_path / "clusterforge.rules.yml"
    rules.write_text(RULES.read_text())
    conf = tmp_path / "prometheus.yml"
    conf.write_text(render(example_plan("lab").doc, rule_files=[str(rules)]))
    res = subprocess.run([tool, "check", "config", str(conf)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
