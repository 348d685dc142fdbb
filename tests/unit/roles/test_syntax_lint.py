"""site.yml and every role task file parse, resolve their modules, and pass ansible-lint (production)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ._support import INVENTORY, PLAYBOOKS, ROLES, Runner


def test_site_syntax_check(run_ansible: Runner) -> None:
    res = run_ansible("ansible-playbook", "--syntax-check", "-i", str(INVENTORY), str(PLAYBOOKS / "site.yml"))
    assert res.rc == 0, res.output


def test_every_task_file_syntax_check(run_ansible: Runner, tmp_path: Path) -> None:
    """Dynamic includes (tasks/<concern>-RedHat.yml, ...) are not reached by a syntax check of site.yml:
    import each task and handler file statically so that all of them are parsed and their modules resolved."""
    task_files = sorted(p for p in ROLES.glob("*/tasks/*.yml") if p.name != "main.yml")
    handler_files = sorted(ROLES.glob("*/handlers/main.yml"))
    assert any(p.name.endswith("-RedHat.yml") for p in task_files)
    play = {
        "name": "Syntax of every role task file",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [{"ansible.builtin.import_tasks": str(p)} for p in task_files],
        "handlers": [{"ansible.builtin.import_tasks": str(p)} for p in handler_files],
    }
    playbook = tmp_path / "all-task-files.yml"
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    res = run_ansible("ansible-playbook", "--syntax-check", "-i", "localhost,", str(playbook))
    assert res.rc == 0, res.output


ROLE_NAMES = ("preflight", "os_tuning", "nvidia_gpu", "rdma", "nccl")


def test_ansible_lint_production_profile(run_ansible: Runner) -> None:
    """The provisioning playbook, its roles and the project collection (other playbooks in playbooks/
    have their own owners and tests)."""
    res = run_ansible(
        "ansible-lint",
        "--offline",
        "--profile",
        "production",
        "-c",
        str(PLAYBOOKS / ".ansible-lint"),
        "--nocolor",
        str(PLAYBOOKS / "site.yml"),
        *(str(ROLES / r) for r in ROLE_NAMES),
        str(PLAYBOOKS / "collections" / "ansible_collections" / "clusterforge"),
    )
    assert res.rc == 0, res.output[-8000:]
    assert "Profile 'production' was required, and it passed" in res.output


def test_every_role_has_the_standard_layout() -> None:
    for role in ROLE_NAMES:
        base = ROLES / role
        for rel in ("defaults/main.yml", "meta/main.yml", "meta/argument_specs.yml", "tasks/main.yml"):
            assert (base / rel).is_file(), f"{role}: missing {rel}"
        defaults = yaml.safe_load((base / "defaults/main.yml").read_text()) or {}
        spec = yaml.safe_load((base / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
        assert all(k.startswith(f"{role}_") for k in defaults), f"{role}: knob without the role prefix"
        assert set(defaults) == set(spec), f"{role}: defaults and argument spec disagree: {set(defaults) ^ set(spec)}"
