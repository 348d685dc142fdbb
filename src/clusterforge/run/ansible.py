"""Run a playbook with ansible-runner and collect per-host, per-task results from its events.

Each run gets a fresh private_data_dir: ansible-runner persists `env/cmdline` there, and a reused
folder would leak e.g. `--check` into later runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.childenv import scrub_environ
from clusterforge.remote.inventory import inventory_sources
from clusterforge.run.managed import Managed, from_result
from clusterforge.run.task_diff import task_diff

FACT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "clusterforge" / "facts"


@dataclass
class TaskResult:
    host: str
    task: str
    role: str
    status: str  # ok | changed | failed | unreachable | skipped
    message: str = ""
    diff: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""


@dataclass
class HostResult:
    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    started: float = 0.0
    ended: float = 0.0
    failed_task: str = ""
    message: str = ""
    changed_tasks: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        return "changed" if self.changed else "ok"

    @property
    def duration(self) -> float:
        return max(0.0, self.ended - self.started)


@dataclass
class PlaybookResult:
    playbook: str
    rc: int
    status: str
    hosts: dict[str, HostResult]
    tasks: list[TaskResult]
    private_data_dir: str
    duration: float
    #: per host, what its successful tasks manage (files, packages, services, modules): `run.managed`
    managed: dict[str, Managed] = field(default_factory=dict)

    @property
    def failed_hosts(self) -> list[HostResult]:
        return [h for h in self.hosts.values() if h.status in ("failed", "unreachable")]


EventHook = Callable[[dict[str, Any]], None]


#: how `runner_env` picks the strategy: `mitogen` (default) or `linear` (stock Ansible, SSH pipelining +
#: ControlPersist); an escape hatch for a site where Mitogen misbehaves, and the bench's side-by-side variant.
STRATEGY_ENV = "CLUSTERFORGE_ANSIBLE_STRATEGY"
STRATEGIES = ("mitogen", "linear")


def mitogen_strategy_dir() -> Path | None:
    """The folder of Mitogen for Ansible's strategy plugins (`mitogen_linear`, ...), None if not installed."""
    import importlib.util

    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "plugins" / "strategy"
    return folder if (folder / "mitogen_linear.py").is_file() else None


def strategy_env(strategy: str | None = None) -> dict[str, str]:
    """ANSIBLE_STRATEGY(_PLUGINS) for `strategy` (default: $CLUSTERFORGE_ANSIBLE_STRATEGY, else mitogen).

    Mitogen keeps one Python interpreter per host for the whole run and caches the module code in it, so a
    task costs the node a function call instead of a fresh interpreter that unpacks and compiles the
    AnsiballZ payload (measured in the lab: ~0.15 CPU-s a task; bench/README.md). `linear` is stock Ansible;
    with Mitogen missing, `mitogen` falls back to it."""
    choice = (strategy or os.environ.get(STRATEGY_ENV) or "mitogen").strip().lower()
    if choice not in STRATEGIES:
        from clusterforge.errors import InputError, Problem

        raise InputError(
            [
                Problem(
                    "environment",
                    STRATEGY_ENV,
                    " or ".join(STRATEGIES),
                    repr(choice),
                    f"unset {STRATEGY_ENV} (Mitogen) or set it to `linear` (stock Ansible)",
                )
            ],
            "bad Ansible strategy",
        )
    folder = mitogen_strategy_dir() if choice == "mitogen" else None
    if folder is None:
        return {"ANSIBLE_STRATEGY": "linear"}
    return {"ANSIBLE_STRATEGY_PLUGINS": str(folder), "ANSIBLE_STRATEGY": "mitogen_linear"}


#: Ansible settings a user's environment keeps (runner_env)
USER_MAY_SET = (
    "ANSIBLE_CONFIG",
    "ANSIBLE_SSH_ARGS",
    "ANSIBLE_PIPELINING",
    "ANSIBLE_GATHERING",
    "ANSIBLE_CACHE_PLUGIN",
    "ANSIBLE_CACHE_PLUGIN_CONNECTION",
    "ANSIBLE_CACHE_PLUGIN_TIMEOUT",
    "ANSIBLE_FORKS",
    "ANSIBLE_TIMEOUT",
    "ANSIBLE_REMOTE_USER",
    "ANSIBLE_PRIVATE_KEY_FILE",
    "ANSIBLE_SSH_EXECUTABLE",
    "ANSIBLE_CALLBACKS_ENABLED",
    "ANSIBLE_LOG_PATH",
)


def runner_env(forks: int | None = None, strategy: str | None = None) -> dict[str, str]:
    """Environment for ansible: venv tools first on PATH, project collections, tuned SSH, fact cache, and
    the execution strategy (`strategy_env`: Mitogen unless told otherwise)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_COLLECTIONS_PATH": f"{assets.playbooks() / 'collections'}:{assets.collections_dir()}",
        "ANSIBLE_ROLES_PATH": str(assets.playbooks() / "roles"),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=15",
        "ANSIBLE_GATHERING": "smart",
        "ANSIBLE_CACHE_PLUGIN": "jsonfile",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(FACT_CACHE),
        "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "3600",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "False",
        "ANSIBLE_NOCOLOR": "1",
    }
    cfg = assets.playbooks() / "ansible.cfg"
    if cfg.exists():
        env["ANSIBLE_CONFIG"] = str(cfg)
    if forks:
        env["ANSIBLE_FORKS"] = str(forks)
    # The user's own Ansible settings win where they cannot break the run (their ansible.cfg, SSH
    # arguments, fact cache, forks...); roles, collections (the user's are searched after ours), host-key
    # checking and the execution strategy (CLUSTERFORGE_ANSIBLE_STRATEGY) stay clusterforge's.
    for key in USER_MAY_SET:
        if os.environ.get(key):
            env[key] = os.environ[key]
    if os.environ.get("ANSIBLE_COLLECTIONS_PATH"):
        env["ANSIBLE_COLLECTIONS_PATH"] += ":" + os.environ["ANSIBLE_COLLECTIONS_PATH"]
    env.update(strategy_env(strategy))
    return env


def _message(res: dict[str, Any]) -> str:
    for key in ("msg", "stderr", "reason"):
        val = res.get(key)
        if val:
            return str(val).strip()[:500]
    return ""


def run_playbook(
    playbook: str,
    inventory: Path,
    *,
    limit: str | None = None,
    tags: str | None = None,
    skip_tags: str | None = None,
    check: bool = False,
    diff: bool = False,
    forks: int | None = None,
    extravars: dict[str, Any] | None = None,
    on_event: EventHook | None = None,
    keep_artifacts: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> PlaybookResult:
    """Run `playbooks/<playbook>` on `inventory` (a folder with hosts.yml and group_vars/).

    `env` is added to the environment (the target's: e.g. the lab BMCs' account); like the rest of the
    environment it is never in the artifacts kept."""
    import ansible_runner  # heavy import, only when running

    # The hosts file, not its folder: a folder would make Ansible parse plan.json, cables.csv... as
    # inventory sources. group_vars/ beside hosts.yml still load.
    # Absolute: ansible-playbook runs inside the private_data_dir, where a relative path means nothing.
    inventory = Path(inventory).resolve()
    inv_file = inventory / "hosts.yml" if inventory.is_dir() else inventory
    pdd = Path(tempfile.mkdtemp(prefix="clusterforge-run-"))
    # SSH masters (ControlPersist) live for this run only: a master left from an earlier run to a node
    # that was power-cycled since (no FIN reached it) would hang every task and read as "unreachable".
    cp_dir = pdd / "cp"
    cp_dir.mkdir()
    hosts: dict[str, HostResult] = {}
    tasks: list[TaskResult] = []
    managed: dict[str, Managed] = {}
    t0 = time.time()

    def host(name: str) -> HostResult:
        h = hosts.get(name)
        if h is None:
            h = hosts[name] = HostResult(name, started=t0)
        return h

    def handler(ev: dict[str, Any]) -> bool:
        data = ev.get("event_data", {}) or {}
        kind = ev.get("event", "")
        name = data.get("host")
        if name and kind.startswith("runner_on_") and kind not in ("runner_on_start",):
            h = host(name)
            h.ended = time.time()
            res = data.get("res", {}) or {}
            task = data.get("task", "")
            role = data.get("role", "")
            if kind == "runner_on_ok":
                st = "changed" if res.get("changed") else "ok"
                managed.setdefault(name, Managed()).add(from_result(str(data.get("task_action", "")), res))
                if res.get("changed"):
                    h.changed_tasks.append(f"{role}: {task}" if role else task)
            elif kind == "runner_on_failed":
                st = "ok" if data.get("ignore_errors") else "failed"
                if st == "failed":
                    h.failed_task, h.message = (f"{role}: {task}" if role else task), _message(res)
            elif kind == "runner_on_unreachable":
                st = "unreachable"
                h.failed_task, h.message = task, _message(res)
            elif kind == "runner_on_skipped":
                st = "skipped"
            else:
                st = ""
            if st:
                tasks.append(
                    TaskResult(
                        name,
                        task,
                        role,
                        st,
                        _message(res) if st != "ok" else "",
                        task_diff(res, str(data.get("task_action", ""))),
                        str(res.get("stdout", ""))[:4000],
                    )
                )
        if on_event:
            on_event(ev)
        return True

    # the certificate signing key's variables never reach ansible-runner, which copies os.environ
    scrub_environ()
    cmdline = []
    if check:
        cmdline.append("--check")
    if diff:
        cmdline.append("--diff")
    try:
        with _cancel_on_signal() as cancelled:
            r = ansible_runner.run(
                private_data_dir=str(pdd),
                project_dir=str(assets.playbooks()),
                playbook=playbook,
                inventory=inventory_sources(inv_file, pdd),
                limit=limit,
                tags=tags,
                skip_tags=skip_tags,
                cmdline=" ".join(cmdline) or None,
                forks=forks,
                extravars=extravars or {},
                envvars={
                    **runner_env(forks),
                    "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp_dir),
                    RUN_MARKER: str(pdd),
                    **(env or {}),
                },
                event_handler=handler,
                quiet=True,
                suppress_env_files=True,
                cancel_callback=cancelled,
            )
        stats = r.stats or {}
        for key, attr in (
            ("ok", "ok"),
            ("changed", "changed"),
            ("failures", "failed"),
            ("dark", "unreachable"),
            ("skipped", "skipped"),
        ):
            for name, n in (stats.get(key) or {}).items():
                h = host(name)
                setattr(h, attr, int(n))
                h.stats[key] = int(n)
        result = PlaybookResult(
            playbook, int(r.rc), str(r.status), hosts, tasks, str(pdd), time.time() - t0, managed
        )
    finally:
        if keep_artifacts is not None:
            keep_artifacts.mkdir(parents=True, exist_ok=True)
            # ansible-runner saves the whole environment (secrets included) in artifacts/<id>/command
            # and env/: never keep those.
            shutil.copytree(
                pdd / "artifacts",
                keep_artifacts / "artifacts",
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("command", "env", "envvars"),
            )
        close_masters(cp_dir)
        reap_leftovers(str(pdd))
        shutil.rmtree(pdd, ignore_errors=True)
    return result


@contextlib.contextmanager
def _cancel_on_signal() -> Iterator[Callable[[], bool]]:
    """A cancel callback for ansible-runner, with SIGTERM/SIGINT caught only while the run lasts.

    Left to itself, ansible-runner replaces both handlers for the rest of the process, so a later Ctrl-C or
    a CI job's SIGTERM would be swallowed, and a cancelled run would read as a run that just failed, letting
    the caller go on to the next batch. Here the previous handlers come back when the run ends, and a signal
    received during the run cancels it and is raised as KeyboardInterrupt (as `certify` does)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False  # signals reach the main thread only; it decides
        return
    got: list[int] = []

    def handler(signum: int, frame: object) -> None:
        got.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield lambda: bool(got)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if got:
        raise KeyboardInterrupt(f"signal {got[0]}: the playbook run was cancelled")


#: set in every run's environment (= its private_data_dir): what a process left behind by that run carries
RUN_MARKER = "CLUSTERFORGE_RUN_DIR"


def reap_leftovers(run_dir: str, grace_s: float = 2.0) -> list[int]:
    """Kill the processes a finished or cancelled run left behind, found by RUN_MARKER in their environment.

    A cancelled run (ansible-runner kills ansible-playbook) left Mitogen's multiplexer process running,
    re-parented to init, for good; so would any helper a module daemonised. Returns the pids signalled."""
    want = f"{RUN_MARKER}={run_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if want in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                alive.append(pid)
        if not alive or sig == signal.SIGKILL:
            break
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in alive):
            time.sleep(0.05)
    return found


def close_masters(cp_dir: Path) -> None:
    """End the run's SSH masters now rather than when ControlPersist runs out."""
    socks = [p for p in cp_dir.iterdir() if p.is_socket()] if cp_dir.is_dir() else []
    for sock in socks:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "clusterforge-run"],
                capture_output=True,
                timeout=10,
                check=False,
            )
