"""`clusterforge certify` as a user meets it: mounted on the root CLI, bad input exits 2 with a message."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from tests.conftest import REPO


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    return CliRunner()


def test_help_lists_the_options(cli: CliRunner) -> None:
    res = cli.invoke(app, ["certify", "--help"])
    assert res.exit_code == 0
    for opt in ("--tier", "--limit", "--admit", "--jobs", "--format", "--output"):
        assert opt in res.output
    assert "--junit" not in res.output and "--json" not in res.output  # deprecated: hidden


def test_bad_tier_exits_2(cli: CliRunner) -> None:
    res = cli.invoke(app, ["certify", str(REPO / "inventory/clusters/lab.yaml"), "--tier", "weekly"])
    assert res.exit_code == 2 and "--tier must be one of quick, full, burnin" in res.output


def test_bad_spec_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("apiVersion: clusterforge/v1\nkind: Cluster\n")
    res = cli.invoke(app, ["certify", str(spec)])
    assert res.exit_code == 2 and "invalid cluster spec" in res.output


def test_limit_matching_nothing_exits_2(cli: CliRunner) -> None:
    res = cli.invoke(app, ["certify", str(REPO / "inventory/clusters/lab.yaml"), "--limit", "no-such-node"])
    assert res.exit_code == 2 and "selects no node" in res.output
