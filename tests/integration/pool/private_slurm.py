"""A private Slurm controller on this host for the pool tests: munged (own key, own socket), slurmctld and
one slurmd (the host itself, node = `hostname -s`), on free ports, in a temporary folder.

It shares nothing with the lab (other ports, no /run/munge, own state), so the pool manager meets a
real slurmctld without touching the lab's nodes. A second node, `ghost1`, has no slurmd.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

GHOST = "ghost1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root (slurmd, munged as the munge user)"
    for tool in ("slurmctld", "slurmd", "munged", "scontrol", "sinfo", "runuser"):
        if shutil.which(tool) is None:
            return f"{tool} missing"
    try:
        import pwd

        pwd.getpwnam("munge")
    except KeyError:
        return "no munge user"
    return None


@dataclass
class PrivateSlurm:
    root: Path
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        r = subprocess.run(
            list(argv), env=self.env(), capture_output=True, text=True, timeout=30, check=False
        )
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r.stdout

    def start(self) -> None:
        munge = self.root / "munge"
        munge.mkdir()
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        for p in (munge, key):
            shutil.chown(p, "munge", "munge")
        os.chmod(munge, 0o700)
        os.chmod(key, 0o400)
        sock = munge / "munge.sock"
        subprocess.run(
            [
                "runuser",
                "-u",
                "munge",
                "--",
                "munged",
                f"--key-file={key}",
                f"--socket={sock}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'seed'}",
                f"--log-file={munge / 'munged.log'}",
                "--force",
            ],
            check=True,
        )
        ctld, slurmd = _free_port(), _free_port()
        r = self.root
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=cfpooltest",
                    f"SlurmctldHost={self.node}(127.0.0.1)",
                    f"SlurmctldPort={ctld}",
                    f"SlurmdPort={slurmd}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={sock}",
                    f"StateSaveLocation={r / 'state'}",
                    f"SlurmdSpoolDir={r / 'spool'}",
                    f"SlurmctldPidFile={r / 'ctld.pid'}",
                    f"SlurmdPidFile={r / 'slurmd.pid'}",
                    f"SlurmctldLogFile={r / 'ctld.log'}",
                    f"SlurmdLogFile={r / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "SchedulerType=sched/builtin",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "MpiDefault=none",
                    "ReturnToService=2",
                    "SlurmdTimeout=30",
                    f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN",
                    f"NodeName={GHOST} NodeAddr=127.0.0.2 CPUs=1 State=UNKNOWN",
                    "PartitionName=p Nodes=ALL Default=YES State=UP",
                    "",
                ]
            )
        )
        for d in ("state", "spool"):
            (r / d).mkdir()
        subprocess.run(["slurmctld", "-f", str(self.conf)], env=self.env(), check=True)
        self._wait(lambda: "UP" in self.run("scontrol", "ping"), "slurmctld answers")
        subprocess.run(["slurmd", "-f", str(self.conf)], env=self.env(), check=True)
        self._wait(
            lambda: self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t").strip() == "idle",
            f"{self.node} idle",
        )

    @staticmethod
    def _wait(cond: object, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cond():  # type: ignore[operator]
                    return
            except RuntimeError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"private slurm: timed out waiting for {what}")

    def stop(self) -> None:
        for pidfile in ("slurmd.pid", "ctld.pid", "munge/munged.pid"):
            path = self.root / pidfile
            try:
                pid = int(path.read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                continue
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)


def start() -> PrivateSlurm:
    root = Path(tempfile.mkdtemp(prefix="cf-pool-slurm-"))
    os.chmod(root, 0o755)  # munged (as munge) must reach its folder
    ps = PrivateSlurm(root)
    try:
        ps.start()
    except BaseException:
        ps.stop()
        raise
    return ps
