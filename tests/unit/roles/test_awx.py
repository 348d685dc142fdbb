"""What AWX / Automation Controller users run: requirements.yml and execution-environment.yml (valid for
ansible-galaxy and ansible-builder v3, the same collections and ansible-core as clusterforge), and
playbooks/rolling.yml (the drain → reboot → check → resume loop of `clusterforge provision` in Ansible)."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from clusterforge import ansible_deps
from tests.conftest import REPO as ROOT

from ._support import INVENTORY, PLAYBOOKS, Runner

EE = ROOT / "execution-environment.yml"
REQUIREMENTS = ROOT / "requirements.yml"
ROLLING = PLAYBOOKS / "rolling.yml"


def _schema(name: str) -> dict[str, Any]:
    """The schemas ansible-lint vendors (ansiblelint/schemas/, from ansible's own schema repository)."""
    return dict(json.loads((resources.files("ansiblelint") / "schemas" / f"{name}.json").read_text()))


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_requirements_are_the_collections_clusterforge_installs() -> None:
    assert _load(REQUIREMENTS) == ansible_deps.requirements_doc()
    assert {n.replace(".", "/") for n in ansible_deps.BUNDLED} == set(ansible_deps.COLLECTIONS)
    jsonschema.validate(_load(REQUIREMENTS), _schema("requirements"))


def test_installed_collections_match_the_pins() -> None:
    root = ROOT / "collections" / "ansible_collections"
    if not ansible_deps.installed(ROOT / "collections"):
        pytest.skip("collections not installed here (make collections)")
    assert ansible_deps.manifest_versions(root) == ansible_deps.BUNDLED


def test_execution_environment_is_ansible_builder_v3() -> None:
    doc = _load(EE)
    jsonschema.validate(doc, _schema("execution-environment"))
    deps = doc["dependencies"]
    assert doc["version"] == 3 and (ROOT / deps["galaxy"]).resolve() == REQUIREMENTS
    pinned = {
        r.split(">")[0].split("<")[0]: r
        for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    assert deps["ansible_core"]["package_pip"] == pinned["ansible-core"]
    assert deps["ansible_runner"]["package_pip"] == pinned["ansible-runner"]
    assert any("openssh" in s for s in deps["system"])


def test_the_schemas_bite() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": 3, "dependencies": {"galaxy": 7}}, _schema("execution-environment"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"collections": [{"name": 5}]}, _schema("requirements"))


def _site_roles() -> list[tuple[str, Any, list[str]]]:
    (play,) = _load(PLAYBOOKS / "site.yml")
    return [(r["role"], r.get("when"), r.get("tags")) for r in play["roles"]]


def test_rolling_converges_with_the_roles_of_site_yml() -> None:
    tasks = _load(PLAYBOOKS / "tasks" / "converge.yml")
    roles = [(t["ansible.builtin.import_role"]["name"], t.get("when"), t.get("tags")) for t in tasks]
    assert roles == _site_roles()


def test_rolling_follows_the_rollout_and_the_loop() -> None:
    (site,) = _load(PLAYBOOKS / "site.yml")
    (play,) = _load(ROLLING)
    for key in ("serial", "max_fail_percentage", "become", "hosts"):
        assert play[key] == site[key], key
    assert play["vars"]["_cf_inventory_all"] == site["vars"]["_cf_inventory_all"]
    tasks = play["tasks"]
    assert tasks[0] == {"name": "Converge the batch", "ansible.builtin.import_tasks": "tasks/converge.yml"}
    (loop,) = [t for t in tasks if "block" in t]
    steps = [t["name"] for t in loop["block"]]
    order = ["Drain", "Reboot", "Converge again", "Nothing may still be pending", "Resume"]
    at = [next(i for i, s in enumerate(steps) if s.startswith(w)) for w in order]
    assert at == sorted(at), steps
    assert "not ansible_check_mode" in loop["when"]  # --check never drains or reboots
    by_name = {t["name"].split(" (")[0]: t for t in loop["block"]}
    for name in ("Read the node's Slurm state", "Drain the node", "Resume the node"):
        task = by_name[name]
        assert task["ansible.builtin.command"]["argv"][0] == "scontrol"  # argv: never a shell string
        assert task["delegate_to"] == "{{ _cf_slurm_host }}"
    assert "_cf_drain is changed" in by_name["Resume the node"]["when"]  # only our own drain is resumed


def test_rolling_syntax_and_lint(run_ansible: Runner) -> None:
    res = run_ansible("ansible-playbook", "--syntax-check", "-i", str(INVENTORY), str(ROLLING))
    assert res.rc == 0, res.output
    res = run_ansible(
        "ansible-lint",
        "--offline",
        "--profile",
        "production",
        "-c",
        str(PLAYBOOKS / ".ansible-lint"),
        "--nocolor",
        str(ROLLING),
        str(PLAYBOOKS / "tasks" / "converge.yml"),
        str(EE),
        str(REQUIREMENTS),
    )
    assert res.rc == 0, res.output[-8000:]
