"""`--check` changes nothing: every task that runs even in check mode (`check_mode: false`) only reads.

Drift and `provision --check --diff` rely on this: a task forced to run under `--check` must not be able to
change a node. The audit walks every task of every playbook and role (blocks included) and allows only
modules that read, and for `command`, only argv (no shell string) of programs and sub-commands that read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ._support import PLAYBOOKS

#: modules that cannot change the managed node (uri: GET only, checked below)
READ_ONLY_MODULES = {
    "ansible.builtin.slurp",
    "ansible.builtin.stat",
    "ansible.builtin.find",
    "ansible.builtin.uri",
    "community.general.redfish_info",
    "ansible.builtin.command",
}


def _nvidia_smi_query(args: list[str]) -> bool:
    return bool(args) and all(a.startswith(("--query-", "--format=")) for a in args)


#: program -> a check of its arguments that accepts read-only invocations only
READ_ONLY_COMMANDS = {
    "cat": lambda args: all(not a.startswith("-") for a in args),
    "nvidia-smi": _nvidia_smi_query,
    "systemctl": lambda args: args[:1] == ["show"],
    "dpkg-query": lambda args: all(not a.startswith(("--set", "--clear", "--update")) for a in args),
    # blkid only reads (-p: the low-level probe, no cache); -g would garbage-collect its cache file
    "blkid": lambda args: not {"-g", "--garbage-collect"} & set(args),
    # grep only reads; `--` ends the options, so what a template adds after it can only be files
    "grep": lambda args: "--" in args,
}

#: a templated argv must start with a literal list (the program and its options); the rest are operands
_LITERAL_HEAD = re.compile(r"^\{\{\s*(\[[^\[\]]*\])\s*\+")


def _argv(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        m = _LITERAL_HEAD.match(value.strip())
        assert m, f"{where}: a templated argv must begin with a literal list naming the program"
        return [str(a) for a in ast.literal_eval(m.group(1))]
    return [str(a) for a in value]


def _tasks(items: Any) -> Iterator[dict[str, Any]]:
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _tasks(item.get(key))


def _task_files() -> list[Path]:
    files = [p for p in PLAYBOOKS.glob("*.yml")]
    files += [p for p in (PLAYBOOKS / "roles").glob("*/tasks/*.yml")]
    files += [p for p in (PLAYBOOKS / "roles").glob("*/handlers/*.yml")]
    return sorted(files)


def _forced() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in _task_files():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for task in _tasks(doc if isinstance(doc, list) else []):
            if task.get("check_mode") is False:
                out.append((f"{path.relative_to(PLAYBOOKS)}: {task.get('name')}", task))
    return out


FORCED = _forced()


def test_the_audit_sees_the_forced_tasks() -> None:
    assert len(FORCED) >= 10  # the probes of bios, nvidia_gpu, os_tuning, rdma and pending.yml


@pytest.mark.parametrize(("where", "task"), FORCED, ids=[w for w, _ in FORCED])
def test_forced_task_is_read_only(where: str, task: dict[str, Any]) -> None:
    modules = [k for k in task if "." in k and k.split(".")[0] in ("ansible", "community", "clusterforge")]
    assert len(modules) == 1, f"{where}: one module expected, found {modules}"
    module = modules[0]
    assert module in READ_ONLY_MODULES, f"{where}: {module} may change the node; it must not run in --check"
    args = task[module]
    if module == "ansible.builtin.uri":
        assert str(args.get("method", "GET")).upper() == "GET", f"{where}: only GET may run in --check"
    if module != "ansible.builtin.command":
        return
    assert task.get("changed_when") is False, f"{where}: a probe reports no change (changed_when: false)"
    assert isinstance(args, dict) and "argv" in args and "cmd" not in args, f"{where}: argv, not a string"
    argv = _argv(args["argv"], where)
    if argv[:1] == ["timeout"]:
        argv = argv[2:]
    program, rest = argv[0], argv[1:]
    assert program in READ_ONLY_COMMANDS, f"{where}: {program} is not a known read-only program"
    assert READ_ONLY_COMMANDS[program](rest), f"{where}: {program} {rest} is not a read-only invocation"


def test_the_audit_rejects_a_writing_probe() -> None:
    """The rules bite: a `command` that writes, a shell string and a POST are refused."""
    bad = [
        {"ansible.builtin.command": {"argv": ["nvidia-smi", "-pm", "1"]}, "changed_when": False},
        {"ansible.builtin.command": {"cmd": "cat /proc/cmdline"}, "changed_when": False},
        {"ansible.builtin.uri": {"url": "https://bmc", "method": "PATCH"}},
        {"ansible.builtin.shell": "echo 1 > /proc/sys/vm/swappiness"},
        # a templated argv: its program must be literal, and grep's operands only after `--`
        {"ansible.builtin.command": {"argv": "{{ cmd + files }}"}, "changed_when": False},
        {"ansible.builtin.command": {"argv": "{{ ['grep', '-H', ''] + files }}"}, "changed_when": False},
        {"ansible.builtin.command": {"argv": "{{ ['mdadm', '--assemble'] + devs }}"}, "changed_when": False},
    ]
    for task in bad:
        with pytest.raises(AssertionError):
            test_forced_task_is_read_only("constructed", task)
