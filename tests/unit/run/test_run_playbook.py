"""run_playbook through ansible-runner on a local host: a relative inventory path works, and a limit that
matches no host is a failed run with no host results (never an empty success)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.run import ansible
from clusterforge.run.ansible import run_playbook


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True)
    hosts = {
        "all": {
            "hosts": {"n1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
        }
    }
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (inv / "group_vars" / "all.yml").write_text("{}\n")
    return inv


def test_relative_inventory_reaches_the_host(inventory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(inventory.parent)
    res = run_playbook(
        "pending.yml",
        Path("inv"),
        limit="n1",
        extravars={"clusterforge_pending_file": str(inventory / "none")},
    )
    assert res.rc == 0 and set(res.hosts) == {"n1"}
    assert [(t.task, t.status) for t in res.tasks] == [
        ("Read the pending-reboot record", "ok"),
        ("Read the pending-reboot sources", "ok"),
    ]


def test_limit_matching_no_host_is_a_failure(inventory: Path) -> None:
    res = run_playbook("pending.yml", inventory, limit="nosuchhost")
    assert res.rc != 0 and res.hosts == {}


def test_ssh_masters_belong_to_one_run(inventory: Path, tmp_path: Path) -> None:
    """Each run has its own ControlPath folder, gone afterwards: no run multiplexes over a master that an
    earlier run left to a node which has been power-cycled since (that hangs until 'unreachable')."""
    play = tmp_path / "cp.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "control path folder",
                            "ansible.builtin.debug": {
                                "msg": "{{ lookup('env', 'ANSIBLE_SSH_CONTROL_PATH_DIR') }}"
                            },
                        }
                    ],
                }
            ]
        )
    )
    msgs: list[str] = []

    def on_event(ev: dict[str, object]) -> None:
        res = (ev.get("event_data") or {}).get("res", {})  # type: ignore[attr-defined]
        if isinstance(res, dict) and res.get("msg"):
            msgs.append(str(res["msg"]))

    seen = []
    for _ in range(2):
        res = run_playbook(str(play), inventory, on_event=on_event)
        assert res.rc == 0
        folder = msgs[-1]
        seen.append(folder)
        assert folder.startswith(res.private_data_dir) and not Path(folder).exists()
    assert seen[0] != seen[1]


def _carrying(marker: bytes) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def test_a_signal_cancels_the_run_and_is_raised_then_handlers_come_back(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM during a run (a CI job cancelled) stops the playbook and reaches the caller as an interrupt,
    so no next batch starts, and leaves no process of the run behind (Mitogen's multiplexer outlived a
    cancelled ansible-playbook); afterwards the process's own handlers are in place again (ansible-runner
    alone would keep its handler and swallow every later Ctrl-C)."""
    run_dirs: list[str] = []
    real_mkdtemp = ansible.tempfile.mkdtemp

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        run_dirs.append(real_mkdtemp(*args, **kwargs))
        return run_dirs[-1]

    monkeypatch.setattr(ansible.tempfile, "mkdtemp", mkdtemp)
    play = tmp_path / "slow.yml"
    play.write_text(
        yaml.safe_dump(
            [{"hosts": "all", "gather_facts": False, "tasks": [{"ansible.builtin.command": "sleep 60"}]}]
        )
    )
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        timer = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt, match="signal 15"):
            run_playbook(str(play), inventory)
        assert time.monotonic() - t0 < 45  # cancelled, not run to the end of `sleep 60`
        (run_dir,) = run_dirs
        left = _carrying(f"{ansible.RUN_MARKER}={run_dir}".encode())
        assert left == [], f"processes of the cancelled run are still running: {left}"
        assert seen == []  # the signal went to the run, not to the handler outside it
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        assert seen == [signal.SIGTERM]  # ... which is back now
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- before/after for service tasks (Ansible's service modules report a change without a diff) ----------
@pytest.mark.parametrize(
    ("module", "name", "active", "boot", "before", "after"),
    [
        # a start in check mode: enablement unchanged, so not listed
        ("ansible.builtin.systemd_service", "nvidia-persistenced.service", "inactive", "enabled",
         "nvidia-persistenced.service: inactive\n", "nvidia-persistenced.service: active\n"),
        # only the boot state changes
        ("ansible.builtin.systemd", "irqbalance", "active", "disabled",
         "irqbalance at boot: disabled\n", "irqbalance at boot: enabled\n"),
    ],
    ids=["start", "enable-only"],
)  # fmt: skip
def test_service_task_gets_a_before_and_after(
    module: str, name: str, active: str, boot: str, before: str, after: str
) -> None:
    from clusterforge.run.task_diff import task_diff as _task_diff

    status = {"ActiveState": active, "UnitFileState": boot}
    res = {"changed": True, "name": name, "state": "started", "enabled": True, "status": status}
    (d,) = _task_diff(res, module)
    assert (d["before"], d["after"]) == (before, after)


def test_task_diff_keeps_module_diffs_and_ignores_unchanged_or_other_modules() -> None:
    from clusterforge.run.task_diff import task_diff as _task_diff

    given = {"before": "a\n", "after": "b\n"}
    assert _task_diff({"changed": True, "diff": given}, "ansible.builtin.template") == [given]
    assert _task_diff({"changed": True, "diff": [given, given]}, "x") == [given, given]
    svc = {"name": "u", "state": "started", "status": {"ActiveState": "inactive"}}
    assert _task_diff({**svc, "changed": False}, "ansible.builtin.systemd_service") == []
    assert _task_diff({**svc, "changed": True}, "ansible.builtin.command") == []
    assert _task_diff({**svc, "changed": True}, "ansible.builtin.service") != []


def test_a_loop_task_carries_the_diffs_of_its_changed_items() -> None:
    from clusterforge.run.task_diff import task_diff as _task_diff

    mtu = {"before": "eth1 MTU: 1500\n", "after": "eth1 MTU: 9000\n"}
    res = {
        "changed": True,
        "msg": "All items completed",
        "results": [
            {"changed": False, "diff": {"before": "eth0 MTU: 9000\n", "after": "eth0 MTU: 9000\n"}},
            {"changed": True, "diff": mtu},
            {"changed": False, "skipped": True},
        ],
    }
    assert _task_diff(res, "clusterforge.node.command_setting") == [mtu]


def test_a_playbook_that_cannot_run_is_a_tool_failure_with_its_log_kept(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ansible-playbook's own failure (here: a playbook that does not parse) is exit 1 material, not drift,
    and its output is kept under the records folder (never the environment ansible-runner also saves)."""
    from rich.console import Console

    from clusterforge.run.logs import PLAYBOOK_RAN
    from clusterforge.run.provision import Options, provision

    books = tmp_path / "books"
    books.mkdir()
    (books / "site.yml").write_text(
        "- hosts: all\n  tasks: [ {name: broken, ansible.builtin.nosuchmodule: {}} ]\n"
    )
    monkeypatch.setenv("CLUSTERFORGE_PLAYBOOKS", str(books))
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records" / "records.db"))
    monkeypatch.setenv("CLUSTERFORGE_SECRET_PROBE", "s3cret-value")
    plan_doc = {
        "cluster": "t",
        "plan_hash": "0" * 64,
        "target": "baremetal",
        "rollout": {"serial": "100%", "max_fail_percentage": 0},
        "nodes": [{"name": "n1"}],
    }
    report = provision(plan_doc, inventory, Options(), None, Console(file=open(os.devnull, "w")))  # noqa: SIM115
    assert not report.ok and report.tool_error and "rc " in report.tool_error
    assert report.hosts["n1"].status == "failed"
    logs = Path(report.logs)
    assert logs.parent == tmp_path / "records" / "logs" and oct(logs.stat().st_mode & 0o777) == "0o700"
    kept = [p for p in logs.rglob("*") if p.is_file()]
    assert any(p.name == "stdout" and "nosuchmodule" in p.read_text() for p in kept)
    assert not [p for p in kept if p.name in ("env", "envvars", "command")]
    assert not [p for p in kept if "s3cret-value" in p.read_text(errors="replace")]
    res = run_playbook("site.yml", inventory)
    assert res.rc not in PLAYBOOK_RAN
