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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.certify.results import CheckResult, NodeResult, read_results
from clusterforge.childenv import child_env
from clusterforge.remote.ssh import BOOT_WAIT_S, SshSetup, booted, reachable, ssh_setup

TIER_MARKERS = {"quick": "quick", "full": "quick or full", "burnin": "burnin"}
DEADLINE_S = {"quick": 900, "full": 4 * 3600, "burnin": 24 * 3600}

Progress = Callable[[str, str, dict[str, Any]], None]  # (node, event, data)


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


def booting_result(node: str, state: str) -> NodeResult:
    """A node that answers SSH but whose units are still starting (or stopping, or in rescue mode): not
    measured, so `error` and incomplete, never a verdict on its settings."""
    check = CheckResult(
        node,
        "node.booted",
        "error",
        f"{node} not booted: systemd is {state} after {BOOT_WAIT_S} s",
        expected="systemctl is-system-running: running or degraded",
        found=state,
        fix="look for the unit that holds the boot up (systemctl list-jobs) and certify once it finished",
    )
    return NodeResult(node, [check], complete=False, note=f"incomplete: systemd {state}")


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
    env: Mapping[str, str] | None = None,
) -> dict[str, NodeResult]:
    """Validator results per node (plan order). Unreachable nodes get one `ssh.reachable` error, a node still
    booting (systemd starting its units, waited for up to BOOT_WAIT_S) one `node.booted` error; a node whose
    run is killed or cut short is incomplete (verdict error, never pass). `env` is added to the validators'
    environment: the target's (`clusterforge.targets`; e.g. the lab BMCs' account for the bios validator)."""
    if tier not in TIER_MARKERS:
        raise ValueError(f"tier must be one of {', '.join(TIER_MARKERS)}; got {tier!r}")
    plan_path = inventory / "plan.json"
    workdir = workdir or Path(tempfile.mkdtemp(prefix="cf-certify-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ssh = ssh_setup(plan_doc, inventory, nodes)
    child = PYTEST_ENV | dict(env or {})
    out: dict[str, NodeResult] = {}
    lock = threading.Lock()

    def one(node: str) -> None:
        start = time.monotonic()
        if progress:
            progress(node, "connect", {})
        ok, why = reachable(ssh, node)
        up, state = booted(ssh, node) if ok else (False, "")
        if not ok:
            res = unreachable_result(node, why)
        elif not up:
            res = booting_result(node, state)
        else:
            run = NodeRun(node, workdir / f"{node}.jsonl", deadline_s or DEADLINE_S[tier])
            run_node(pytest_argv(plan_path, ssh, node, tier, run.results), run, progress, cancel, child)
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
    env: Mapping[str, str] | None = None,
) -> dict[str, list[CheckResult]]:
    """Check results per node without recording anything (used by `clusterforge drift`); setting `cancel`
    kills the validators still running."""
    names = nodes or [n["name"] for n in plan_doc["nodes"]]
    if record:
        raise ValueError("run_checks does not record; use clusterforge.flows.certify for certification")
    results = certify_nodes(plan_doc, inventory, names, tier, jobs=jobs, cancel=cancel, env=env)
    return {n: r.checks for n, r in results.items()}
