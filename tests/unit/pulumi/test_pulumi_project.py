"""stacks/cluster: the Pulumi project, its stack files and the thin program."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pulumi_mocks import REPO

from clusterforge.spec import load_spec

STACK_DIR = REPO / "stacks" / "cluster"
STACKS = ["lab", "h100-ib-1su", "h100-ib-4su", "h100-roce-2su", "b200-ib-16su"]


def test_project() -> None:
    project = yaml.safe_load((STACK_DIR / "Pulumi.yaml").read_text())
    assert project["name"] == "clusterforge"  # config keys are clusterforge:<key>
    assert project["runtime"]["name"] == "python"
    venv = project["runtime"]["options"]["virtualenv"]
    assert (STACK_DIR / venv).resolve() == (REPO / ".venv").resolve()
    main = (STACK_DIR / "__main__.py").read_text()
    assert "clusterforge.pulumi.program import main" in main and "parents[2]" in main


@pytest.mark.parametrize("name", STACKS)
def test_stack_file_names_a_spec_of_the_same_cluster(name: str) -> None:
    cfg = yaml.safe_load((STACK_DIR / f"Pulumi.{name}.yaml").read_text())["config"]
    spec = REPO / cfg["clusterforge:spec"]
    assert spec.is_file()
    assert load_spec(spec).name == name
    assert not any("password" in k.lower() for k in cfg), "credentials belong in `pulumi config set --secret`"


def test_every_stack_file_is_listed() -> None:
    found = sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in Path(STACK_DIR).glob("Pulumi.*.yaml")
    )
    assert found == sorted(STACKS)
