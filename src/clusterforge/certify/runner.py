"""Run the validators against nodes: one pytest process per node, in parallel, one SSH session per node.

Why one process per node rather than pytest-xdist: a node's checks then run in one process that holds the
node's only SSH connection (an OpenSSH ControlMaster opened by the reachability probe and reused by every
check), the process can be given a deadline and killed as a whole, and a slow or hung node never holds up
another's checks. Measured on the 4-node lab: see bench/README.md ("Certification").
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.certify.results import CheckResult, NodeResult, read_results
from clusterforge.childenv import child_env
from clusterforge.errors import ClusterforgeError
from clusterforge.run.ansible import lab_env
from clusterforge.run.site import connection_vars, inventory_sources

TIER_MARKERS = {"quick": "quick", "full": "quick or full", "burnin": "burnin"}
DEADLINE_S = {"quick": 900, "full": 4 * 3600, "burnin": 24 * 3600}
SSH_PROBE_S = 60  # a slow login (pam_systemd waits up to 25 s on a busy logind) is not an unreachable node

Progress = Callable[[str, str, dict[str, Any]], None]  # (node, event, data)


@dataclass
class SshSetup:
    """A private ssh_config for one run (`ssh -F`): one `Host <node>` block per node from the inventory's
    connection variables over every layer (generated, then the site layer), then the user's own ssh
    configuration, then clusterforge's defaults (strict host keys, a ControlMaster per node under a short
    private folder: socket paths must stay < 104 bytes). First value wins, as in ssh itself."""

    folder: Path
    config: Path
    nodes: list[str] = field(default_factory=list)

    def target(self, node: str) -> str:
        return node  # the Host alias of the node's block

    def close(self) -> None:
        for node in self.nodes:
            subprocess.run(
                ["ssh", "-F", str(self.config), "-O", "exit", self.target(node)],
                capture_output=True,
                timeout=10,
                check=False,
            )
        shutil.rmtree(self.folder, ignore_errors=True)


def _ssh_options(conn: dict[str, Any], address: str) -> dict[str, str]:
    """ssh_config options of one node from Ansible's connection variables (`-o K=V`, `-J`, `-p`, `-i`)."""
    opts: dict[str, str] = {"HostName": str(conn.get("ansible_host") or address)}
    if conn.get("ansible_user"):
        opts["User"] = str(conn["ansible_user"])
    if conn.get("ansible_port"):
        opts["Port"] = str(conn["ansible_port"])
    if conn.get("ansible_ssh_private_key_file"):
        opts |= {"IdentityFile": str(conn["ansible_ssh_private_key_file"]), "IdentitiesOnly": "yes"}
    args = shlex.split(f"{conn.get('ansible_ssh_common_args', '')} {conn.get('ansible_ssh_extra_args', '')}")
    flags = {"-J": "ProxyJump", "-p": "Port", "-i": "IdentityFile", "-l": "User"}
    for i, a in enumerate(args[:-1]):
        if a == "-o" and "=" in args[i + 1]:
            k, v = args[i + 1].split("=", 1)
            opts.setdefault(k.strip(), v.strip())
        elif a in flags:
            opts.setdefault(flags[a], args[i + 1])
    return opts


def _config_line(key: str, value: str) -> str:
    if any(c in value for c in "\n\r\0") or any(c in key for c in " \t\n\r\0=\"'"):
        raise ClusterforgeError(f"SSH setting {key!r}: a value with a line break cannot go into ssh_config")
    return (
        f'  {key} "{value}"' if (" " in value or "\t" in value) and '"' not in value else f"  {key} {value}"
    )


def ssh_setup(plan_doc: dict[str, Any], inventory: Path, nodes: list[str]) -> SshSetup:
    """ssh_config for `nodes`: user, port, key, jump host and `-o` options as Ansible would use them
    (so a site setting reaches Ansible, certification and burn-in alike); StrictHostKeyChecking stays on
    unless the inventory or the user's ssh configuration turns it off."""
    folder = Path(tempfile.mkdtemp(prefix="cf-ssh-", dir="/tmp"))
    try:
        return _write_ssh_config(folder, plan_doc, inventory, nodes)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_ssh_config(folder: Path, plan_doc: dict[str, Any], inventory: Path, nodes: list[str]) -> SshSetup:
    conns = connection_vars(inventory_sources(inventory, folder), nodes)
    addresses = {n["name"]: n["mgmt_ip"] for n in plan_doc["nodes"] if n["name"] in nodes}
    lines: list[str] = []
    for node in nodes:
        opts = _ssh_options(conns.get(node, {}), addresses.get(node, node))
        lines += [f"Host {node}", *(_config_line(k, v) for k, v in opts.items())]
    # the user's and the system's own configuration, for whatever the inventory does not set
    lines += ["Match all", "  Include ~/.ssh/config", "  Include /etc/ssh/ssh_config"]
    defaults = {
        "User": "root",
        "StrictHostKeyChecking": "yes",
        "BatchMode": "yes",
        "ConnectTimeout": "5",
        "ServerAliveInterval": "5",
        "ServerAliveCountMax": "8",  # 40 s: a busy logind can take 25 s to open a session
        "LogLevel": "ERROR",
        "ControlMaster": "auto",
        "ControlPath": f"{folder}/%C",
        "ControlPersist": "600",
    }
    lines += ["Host *", *(_config_line(k, v) for k, v in defaults.items())]
    config = folder / "ssh_config"
    config.write_text("\n".join(lines) + "\n")
    return SshSetup(folder, config, list(nodes))


def reachable(ssh: SshSetup, node: str, tries: int = 3) -> tuple[bool, str]:
    """Open the node's ControlMaster (the one SSH session every check then reuses).

    A slow login (a loaded host) can outlast the client's wait for the master it just forked ("Failed to
    connect to new control master"); the master is still coming up, so that case is tried again."""
    ok, why = _probe(ssh, node)
    while not ok and ("control master" in why or "not responding" in why) and tries > 1:
        tries -= 1
        time.sleep(1)
        ok, why = _probe(ssh, node)
    return ok, why


def _probe(ssh: SshSetup, node: str) -> tuple[bool, str]:
    try:
        p = subprocess.run(
            ["ssh", "-F", str(ssh.config), ssh.target(node), "true"],
            capture_output=True,
            text=True,
            timeout=SSH_PROBE_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"no SSH answer within {SSH_PROBE_S} s"
    if p.returncode != 0:
        return False, (p.stderr.strip().splitlines() or [f"ssh exit {p.returncode}"])[-1]
    return True, ""


#: environment of every validator process: plugins installed beside pytest (hypothesis, xdist, ...) are not
#: loaded; they cost ~0.6 CPU-s per process, once per node (bench/README.md, "Certification at 32 nodes")
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def pytest_argv(plan_path: Path, ssh: SshSetup, node: str, tier: str, results: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        str(assets.validators()),
        "-m",
        TIER_MARKERS[tier],
        "--plan",
        str(plan_path),
        "--hosts",
        f"ssh://{ssh.target(node)}",
        "--ssh-config",
        str(ssh.config),
        "--cf-results",
        str(results),
        "-q",
        "--no-header",
        "-p",
        "no:cacheprovider",
        "-p",
        "testinfra.plugin",  # named here: the run sets PYTEST_ENV (no plugin is loaded unless named)
        "--tb=no",
        "-rN",
    ]


@dataclass
class NodeRun:
    """One node's validator process (killable; its results file is read as it grows)."""

    node: str
    results: Path
    deadline_s: float
    proc: subprocess.Popen[bytes] | None = None
    killed: str = ""


def _watch(run: NodeRun, progress: Progress | None, stop: threading.Event) -> None:
    seen = 0
    while not stop.wait(0.2):
        seen = _emit(run, progress, seen)
    _emit(run, progress, seen)


def _emit(run: NodeRun, progress: Progress | None, seen: int) -> int:
    if progress is None or not run.results.exists():
        return seen
    lines = run.results.read_text(encoding="utf-8", errors="replace").splitlines()
    for line in lines[seen:]:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            return seen  # torn line: read it again next time
        progress(run.node, rec.get("kind", "?"), rec)
        seen += 1
    return seen


def run_node(
    argv: list[str],
    run: NodeRun,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run one node's validators until they end, the deadline passes, or the run is cancelled; `env` is
    added to this process's environment (e.g. the lab BMCs' account for the bios validator)."""
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(run, progress, stop), daemon=True)
    watcher.start()
    env = child_env({**(env or {}), "PYTHONDONTWRITEBYTECODE": "1"})  # no signing-key variables
    with run.results.with_suffix(".log").open("wb") as log:
        run.proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            preexec_fn=_die_with_parent,
        )
    end = time.monotonic() + run.deadline_s
    try:
        while run.proc.poll() is None:
            if cancel is not None and cancel.is_set():
                run.killed = "cancelled"
            elif time.monotonic() > end:
                run.killed = f"deadline of {run.deadline_s:.0f} s passed"
            if run.killed:
                _kill(run.proc)
                break
            time.sleep(0.05)
        run.proc.wait()
    finally:
        stop.set()
        watcher.join(timeout=5)


def _die_with_parent() -> None:
    """Child side: get SIGTERM when the runner thread that started us goes away (runner killed)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def unreachable_result(node: str, why: str) -> NodeResult:
    check = CheckResult(
        node,
        "ssh.reachable",
        "error",
        f"{node} unreachable over SSH: {why}",
        expected="SSH session as the inventory's user",
        found=why,
        fix="check the node's power, management network and sshd",
        unreachable=True,
    )
    return NodeResult(node, [check], complete=True, unreachable=True, note=f"unreachable: {why}")


def certify_nodes(
    plan_doc: dict[str, Any],
    inventory: Path,
    nodes: list[str],
    tier: str,
    *,
    jobs: int | None = None,
    workdir: Path | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    deadline_s: float | None = None,
) -> dict[str, NodeResult]:
    """Validator results per node (plan order). Unreachable nodes get one `ssh.reachable` error; a node whose
    run is killed or cut short is incomplete (verdict error, never pass)."""
    if tier not in TIER_MARKERS:
        raise ValueError(f"tier must be one of {', '.join(TIER_MARKERS)}; got {tier!r}")
    plan_path = inventory / "plan.json"
    workdir = workdir or Path(tempfile.mkdtemp(prefix="cf-certify-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ssh = ssh_setup(plan_doc, inventory, nodes)
    # lab_env: the lab BMCs' account, for the Redfish checks (software.bios: quick; bios attributes: full)
    env = PYTEST_ENV | lab_env(plan_doc)
    out: dict[str, NodeResult] = {}
    lock = threading.Lock()

    def one(node: str) -> None:
        start = time.monotonic()
        if progress:
            progress(node, "connect", {})
        ok, why = reachable(ssh, node)
        if not ok:
            res = unreachable_result(node, why)
        else:
            run = NodeRun(node, workdir / f"{node}.jsonl", deadline_s or DEADLINE_S[tier])
            run_node(pytest_argv(plan_path, ssh, node, tier, run.results), run, progress, cancel, env)
            res = read_results(run.results, node)
            if run.killed:
                res.complete, res.note = False, f"incomplete: {run.killed}"
            elif run.proc is not None and run.proc.returncode not in (0, 1) and not res.complete:
                log = run.results.with_suffix(".log")
                tail = log.read_text(errors="replace")[-500:].strip() if log.exists() else ""
                res.note = f"incomplete: validators exited {run.proc.returncode}: {tail}"
        res.seconds = time.monotonic() - start
        with lock:
            out[node] = res
        if progress:
            progress(node, "done", {"verdict": res.verdict, "status": res.status_word})

    cancel = cancel or threading.Event()
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs or len(nodes))) as pool:
            futures = [pool.submit(one, n) for n in nodes]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                cancel.set()  # interrupted: kill every node's validators before leaving
                raise
    finally:
        ssh.close()
    return {n: out[n] for n in nodes if n in out}


def run_checks(
    plan_doc: dict[str, Any],
    inventory: Path,
    tier: str = "quick",
    nodes: list[str] | None = None,
    record: bool = False,
    jobs: int | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, list[CheckResult]]:
    """Check results per node without recording anything (used by `clusterforge drift`); setting `cancel`
    kills the validators still running."""
    names = nodes or [n["name"] for n in plan_doc["nodes"]]
    if record:
        raise ValueError("run_checks does not record; use clusterforge.certify.pipeline for certification")
    results = certify_nodes(plan_doc, inventory, names, tier, jobs=jobs, cancel=cancel)
    return {n: r.checks for n, r in results.items()}
