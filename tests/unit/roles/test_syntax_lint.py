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


ROLE_NAMES = ("preflight", "os_tuning", "nvidia_gpu", "rdma", "lldpd", "nccl", "benchmarks", "storage")


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
        spec = yaml.safe_load((base / "meta/argument_specs.yml").read_text())["argument_specs"]["main"][
            "options"
        ]
        assert all(k.startswith(f"{role}_") for k in defaults), f"{role}: knob without the role prefix"
        assert set(defaults) == set(spec), (
            f"{role}: defaults and argument spec disagree: {set(defaults) ^ set(spec)}"
        )


COMMAND_MODULES = {
    "ansible.builtin.apt",
    "ansible.builtin.package",
    "ansible.builtin.dnf",
    "ansible.builtin.dpkg_selections",
    "ansible.builtin.service_facts",
    "ansible.builtin.systemd_service",
    "community.general.dnf_versionlock",
    "ansible.builtin.command",
    "ansible.builtin.shell",
}
READ_ONLY = {
    "ansible.builtin.command",
    "ansible.builtin.slurp",
    "ansible.builtin.stat",
    "ansible.builtin.find",
}


def _tasks(tasks: list | None):
    for t in tasks or []:
        if "block" in t:
            yield from _tasks(t["block"])
        else:
            yield t


def _all_tasks():
    for f in sorted(ROLES.glob("*/tasks/*.yml")) + sorted(ROLES.glob("*/handlers/*.yml")):
        if f.parent.parent.name not in ROLE_NAMES:
            continue
        for t in _tasks(yaml.safe_load(f.read_text())):
            yield f, t


def test_every_command_a_task_runs_has_a_timeout() -> None:
    """`timeout N ...` in the argv or the task keyword `timeout:` (clusterforge.node modules: built in)."""
    missing = []
    for f, t in _all_tasks():
        for module in COMMAND_MODULES & set(t):
            args = t[module] if isinstance(t[module], dict) else {}
            argv = args.get("argv") or []
            if "timeout" not in t and not (argv and argv[0] == "timeout"):
                missing.append(f"{f.relative_to(ROLES)}: {t.get('name')}")
    assert not missing, missing


def test_changed_when_false_only_on_read_only_probes() -> None:
    wrong = []
    for f, t in _all_tasks():
        if t.get("changed_when") is False:
            module = next((k for k in t if k.startswith(("ansible.", "community.", "clusterforge."))), "")
            if module not in READ_ONLY or (
                module == "ansible.builtin.command"
                and t.get("check_mode") is not False
                and "not ansible_check_mode" not in str(t.get("when"))
            ):
                wrong.append(f"{f.relative_to(ROLES)}: {t.get('name')} ({module})")
    assert not wrong, wrong
