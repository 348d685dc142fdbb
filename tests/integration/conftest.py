"""Integration fixtures: ONE local lab for the whole session (docs/lab.md).

`lab` (session) brings the lab up from a cached image (first run builds the image: ~2-3 min) and tears it
down at the end, then checks the host is as before. The plan is $CLUSTERFORGE_LAB_PLAN, else
inventory/generated/lab/plan.json, else a 4-node synthetic plan (roce-01/02, ib-01/02, 8 rails each).
A lab that was already fully up before the session is reused and left up; so is any lab when
CLUSTERFORGE_LAB_KEEP=1 or while another test session (registered under /run/lock) still uses it.
Tests needing it carry `@pytest.mark.lab`; without root or systemd-nspawn they are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAB_SPEC, REPO

LOCK = Path("/run/lock/clusterforge-lab-tests.lock")
USERS = Path("/run/lock/clusterforge-lab-tests.users")  # one file per test session (pid) using the lab
LOCK_TIMEOUT_S = float(os.environ.get("CLUSTERFORGE_LAB_LOCK_TIMEOUT", "600"))


def lab_unavailable() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "the lab needs root (netns, bridges, systemd-nspawn): run the lab tests as root"
    for tool in (
        "systemd-nspawn",
        "debootstrap",
        "slurmctld",
        "munged",
        "zstd",
        "nsenter",
        "ssh",
        "apt-cacher-ng",
    ):
        if shutil.which(tool) is None:
            return f"{tool} missing: run scripts/install-system-deps.sh"
    return None


requires_root = pytest.mark.skipif(lab_unavailable() is not None, reason=lab_unavailable() or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = lab_unavailable()
    if reason is None:
        return
    for item in items:
        if item.get_closest_marker("lab"):
            item.add_marker(pytest.mark.skip(reason=reason))


def _plan_source(tmp: Path) -> Path:
    """$CLUSTERFORGE_LAB_PLAN, else the embedded default spec planned now (what `make provision` uses)."""
    env = os.environ.get("CLUSTERFORGE_LAB_PLAN")
    if env:
        return Path(env)
    from clusterforge.flows.plan import write_outputs
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    with _locked():
        out = write_outputs(build_plan(load_spec(LAB_SPEC)), REPO / "inventory/generated")
    return out / "plan.json"


def _lock_holders() -> list[str]:
    """Processes holding LOCK (from /proc/locks), for the message when it is not released."""
    try:
        ino = os.stat(LOCK).st_ino
    except OSError:
        return []
    out = []
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.replace("->", "").split()
        if len(f) > 5 and f[5].endswith(f":{ino}") and f[4] != str(os.getpid()):
            try:
                cmd = Path(f"/proc/{f[4]}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                cmd = "?"
            out.append(f"pid {f[4]} ({cmd[:80]})")
    return out


@contextlib.contextmanager
def _locked(timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Serialise lab set-up/tear-down between test sessions; fail (not hang) if the lock is never freed."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{LOCK} held for over {timeout:.0f} s by {_lock_holders() or 'unknown'}")
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def lab_plan_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _plan_source(tmp_path_factory.mktemp("lab-plan"))


def _users(register: bool | None) -> list[int]:
    """Test sessions using the lab (pids), registering (True) or leaving (False) this one; call locked."""
    from clusterforge.lab import procs

    USERS.mkdir(parents=True, exist_ok=True)
    me = USERS / str(os.getpid())
    if register:
        me.touch()
    elif register is False:
        me.unlink(missing_ok=True)
    alive = []
    for f in USERS.iterdir():
        if f.name.isdigit() and procs.pid_alive(int(f.name)):
            alive.append(int(f.name))
        else:
            f.unlink(missing_ok=True)
    if not alive:
        with contextlib.suppress(OSError):
            USERS.rmdir()
    return alive


@pytest.fixture(scope="session")
def lab(lab_plan_path: Path, worker_id: str) -> Iterator[object]:
    """The session's lab (a clusterforge.lab.Lab), every node SSH-reachable."""
    reason = lab_unavailable()
    if reason is not None:
        print(f"\nlab tests skipped: {reason}")
        pytest.skip(reason)
    from clusterforge.lab import Lab

    lab = Lab(lab_plan_path)
    with _locked():
        others = [p for p in _users(True) if p != os.getpid()]
        already = not others and all(lab.healthy(n.name) for n in lab.plan.nodes)
        lab.up(timeout=300)
    yield lab
    with _locked():
        others = [p for p in _users(False) if p != os.getpid()]
        keep = already or os.environ.get("CLUSTERFORGE_LAB_KEEP") == "1" or worker_id != "master"
        if keep or others:
            why = f"test sessions {others} still use it" if others else "it was up before"
            print(f"\nlab {lab.cluster} left up ({why}; `clusterforge lab down` removes it)")
            return
        lab.down()
    left = {k: v for k, v in lab.leftovers().items() if v}
    assert not left, f"lab down left traces on the host: {left}"


@dataclass
class ProvisionedLab:
    """The session lab after one full `clusterforge provision` (rolling reboots included)."""

    lab: Any
    doc: dict[str, Any]
    inventory: Path
    spec: Path
    report: Any
    log: Path
    #: the records database the provision wrote its run (and each node's applied state) to: a later
    #: session fixture may point $CLUSTERFORGE_DB elsewhere (certify_env), and a drift must read this one
    records_db: Path | None = None

    @property
    def nodes(self) -> list[str]:
        return [n["name"] for n in self.doc["nodes"]]

    def restore(self, *names: str) -> None:
        """Put nodes back to the state right after provisioning (snapshot tag `provisioned`)."""
        for n in names or tuple(self.nodes):
            self.lab.restore(n, "provisioned", wait=True)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def provisioned_lab(
    lab: Any, lab_plan_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> ProvisionedLab:
    """Provision the session lab once with the real pipeline; snapshot every node afterwards."""
    from rich.console import Console

    from clusterforge import targets
    from clusterforge.records._util import default_db_path
    from clusterforge.run.provision import Options, provision_recorded

    doc = json.loads(lab_plan_path.read_text())
    inv = lab_plan_path.parent
    log = tmp_path_factory.mktemp("provision") / "provision.log"
    # Start from pristine nodes, whatever earlier test modules did to them: a fresh lab, as in production.
    for n in doc["nodes"]:
        lab.reset(n["name"], wait=True)  # type: ignore[attr-defined]
    lab.wait_ssh(timeout=120)  # type: ignore[attr-defined]
    with log.open("w") as fh:
        target = targets.for_plan(doc)
        pool, env = target.pool_manager(doc), target.environment(doc)
        # a provision run of the records, as `clusterforge provision` makes: each node's applied state is
        # kept with it (what the fast drift compares the node with)
        report = provision_recorded(doc, inv, Options(), pool, Console(file=fh, width=200), LAB_SPEC, env)
    failed = {h.host: f"{h.failed_task}: {h.message}" for h in report.failed}
    assert report.ok, f"provisioning the lab failed: {failed} (log {log})"
    unread = {h.host: h.applied_error for h in report.hosts.values() if not h.applied}
    assert not unread, f"applied state not read after provisioning: {unread}"
    figures = os.environ.get("CLUSTERFORGE_TEST_FIGURES")  # a file: the run's figures, for bench/README
    if figures:
        with open(figures, "a") as fh:
            row = {"what": "first provision from pristine nodes", "nodes": len(doc["nodes"])}
            fh.write(json.dumps(row | {"seconds": round(report.ended - report.started, 1)}) + "\n")
    for n in doc["nodes"]:
        lab.snapshot(n["name"], "provisioned")  # type: ignore[attr-defined]
    return ProvisionedLab(lab, doc, inv, LAB_SPEC, report, log, default_db_path())
