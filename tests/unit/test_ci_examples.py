"""The CI examples are valid for their CI systems and keep the security promises of docs/ci.md.

Schemas: SchemaStore's GitHub workflow and GitLab CI schemas as vendored by the `check-jsonschema` package
(check_jsonschema/builtin_schemas/vendor/). Then the rules a security reviewer checks: workflows that reach
the cluster never run for pull requests, take credentials only from the secret store into a temporary
ssh-agent (never a key file), are serialised per cluster, and read only (no --fix, no provision).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import REPO

WORKFLOWS = sorted((REPO / ".github/workflows").glob("*.yml"))
GITLAB = REPO / "examples/ci/gitlab-ci.yml"


def _schema(name: str) -> dict[str, Any]:
    text = (resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / f"{name}.json").read_text()
    return dict(json.loads(text))


def _load(path: Path) -> dict[str, Any]:
    """YAML as CI systems read it (1.2 booleans: `on` and `yes` stay strings, `true`/`false` are booleans)."""

    class Loader(yaml.SafeLoader):
        pass

    resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.yaml_implicit_resolvers = resolvers
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return dict(yaml.load(path.read_text(), Loader=Loader))


def _reaches_cluster(doc: dict[str, Any]) -> bool:
    return "secrets." in json.dumps(doc) or "CLUSTER_SSH_KEY" in json.dumps(doc)


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_github_workflow_matches_the_schema(path: Path) -> None:
    jsonschema.validate(_load(path), _schema("github-workflows"))


def test_gitlab_example_matches_the_schema() -> None:
    jsonschema.validate(_load(GITLAB), _schema("gitlab-ci"))


def test_the_schema_check_bites() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"on": "push", "jobs": {"x": {"runs-on": 3}}}, _schema("github-workflows"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_github_workflow_security(path: Path) -> None:
    doc = _load(path)
    text = path.read_text()
    assert doc.get("permissions") == {"contents": "read"}, "least privilege for the job token"
    assert "concurrency" in doc
    assert "pull_request_target" not in doc["on"], "never run a pull request's code with repository secrets"
    assert not re.search(r">\s*~?/?[\w/.~$-]*(id_[a-z0-9]+|\.pem|\.key)\b", text), "no key written to disk"
    assert "${{ secrets." not in "".join(line for line in text.splitlines() if "run:" in line)
    if _reaches_cluster(doc):
        assert "pull_request" not in doc["on"], f"{path.name} reaches the cluster: never for pull requests"
        for job in doc["jobs"].values():
            assert job.get("environment"), "cluster credentials only through a protected environment"
        assert "ssh-add -" in text and "--fix" not in text and "provision" not in text


def test_gitlab_example_security() -> None:
    doc = _load(GITLAB)
    drift = doc["drift"]
    assert drift["rules"][0] == {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"', "when": "never"}
    assert all("CI_COMMIT_REF_PROTECTED" in r["if"] for r in drift["rules"][1:])
    assert drift["resource_group"].startswith("drift-")
    script = "\n".join(drift["before_script"] + drift["script"] + drift["after_script"])
    assert "ssh-add -" in script and "--fix" not in script and "provision" not in script
    assert "CLUSTER_SSH_KEY" not in json.dumps(doc["check"]), "the unprivileged job sees no credentials"


def test_ci_runs_the_installed_wheel_from_an_empty_folder() -> None:
    """Both CI examples build the wheel and run it outside the checkout: plan, and the lab certification."""
    script = REPO / "scripts/ci-wheel-smoke.sh"
    assert script.is_file() and 'provision "$spec" --certify' in script.read_text()
    jobs = _load(REPO / ".github/workflows/ci.yml")["jobs"]
    runs = {name: " ".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    assert "bash scripts/ci-wheel-smoke.sh" in runs["wheel"] and "LAB=1" not in runs["wheel"]
    assert "LAB=1" in runs["wheel-lab"] and "scripts/ci-wheel-smoke.sh" in runs["wheel-lab"]
    gitlab = _load(GITLAB)
    assert gitlab["wheel"]["script"] == ["bash scripts/ci-wheel-smoke.sh"]
    assert "LAB=1 bash scripts/ci-wheel-smoke.sh" in gitlab["wheel-lab"]["script"]
