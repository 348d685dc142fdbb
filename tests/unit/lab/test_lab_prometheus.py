"""The lab's Prometheus: the configuration it is started with (from the plan, the packaged alert rules)
passes `promtool check config` (which also loads the rules); it listens on loopback only; a host without
the binary gets no Prometheus and a warning, not a failed `lab up`."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
import yaml

from clusterforge import assets
from clusterforge.lab import prometheus
from tests.conftest import example_plan
from tests.unit.monitoring.test_monitoring import need_promtool


def test_lab_config_passes_promtool_with_the_packaged_rules(tmp_path: Path) -> None:
    tool = need_promtool()
    plan = example_plan("lab").doc
    rules = assets.monitoring() / "alerts" / "clusterforge.rules.yml"
    conf = tmp_path / "prometheus.yml"
    conf.write_text(prometheus.config_text(plan, rules))
    out = subprocess.run([tool, "check", "config", str(conf)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "20 rules found" in out.stdout + out.stderr
    doc = yaml.safe_load(conf.read_text())
    assert doc["rule_files"] == [str(rules)]
    assert doc["global"]["scrape_interval"] == prometheus.SCRAPE_INTERVAL


def test_listens_on_loopback_with_its_own_storage(tmp_path: Path) -> None:
    argv = prometheus.argv("/usr/bin/prometheus", tmp_path)
    assert argv[0] == "/usr/bin/prometheus"
    assert f"--web.listen-address={prometheus.LISTEN}" in argv
    assert prometheus.LISTEN.startswith("127.0.0.1:")
    assert f"--storage.tsdb.path={tmp_path / 'data'}" in argv
    assert f"--config.file={tmp_path / 'prometheus.yml'}" in argv


def test_no_binary_no_prometheus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with caplog.at_level(logging.WARNING):
        assert prometheus.start(example_plan("lab").doc, tmp_path) is None
    assert "no prometheus binary" in caplog.text
    assert prometheus.running(tmp_path) is None
    assert not (tmp_path / "prometheus").exists()
