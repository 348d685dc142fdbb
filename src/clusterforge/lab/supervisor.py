"""Per-node supervisor: `unshare --mount -- python -m clusterforge.lab.supervisor NODE_DIR`.

Runs detached (own session, pidfile NODE_DIR/supervisor.pid) in a private mount namespace, so the node's
overlay never shows in the host's mount table and disappears with the supervisor. Boots the node with
systemd-nspawn and boots it again when the guest reboots (nspawn exits 133). SIGTERM stops the node
(guest poweroff, then SIGKILL after a grace period) and ends the supervisor. A guest poweroff (exit 0)
leaves the node off; a crash loop gives up after a few quick failures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from clusterforge.lab import cgroups, procs

REBOOT_EXIT = 133
STOP_GRACE_S = 8.0
QUICK_FAIL_S = 5.0
MAX_QUICK_FAILS = 3


class Supervisor:
    def __init__(self, node_dir: Path) -> None:
        self.dir = node_dir
        self.cfg: dict[str, Any] = json.loads((node_dir / "supervisor.json").read_text())
        self.stopping = False
        self.child: subprocess.Popen[bytes] | None = None
        self.boots = 0

    def log(self, msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} [{self.cfg['node']}] {msg}", flush=True)

    def state(self, state: str, **extra: Any) -> None:
        data = {
            "state": state,
            "boots": self.boots,
            "supervisor": os.getpid(),
            "nspawn": self.child.pid if self.child else None,
            "since": time.time(),
            **extra,
        }
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.rename(self.dir / "state.json")

    def on_term(self, signum: int, _frame: object) -> None:
        self.stopping = True
        if self.child and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)  # nspawn asks the guest's systemd to power off

    def mount(self) -> None:
        c = self.cfg
        if os.path.ismount(c["merged"]):
            return
        for d in ("upper", "work", "merged"):
            Path(c[d]).mkdir(parents=True, exist_ok=True)
        if str(os.stat("/proc/self/ns/mnt").st_ino) == os.environ.get("CF_LAUNCHER_MNTNS"):
            raise SystemExit(
                "refusing to mount in the host's mount namespace: run me under `unshare --mount`"
            )
        opts = f"lowerdir={c['lower']},upperdir={c['upper']},workdir={c['work']}"
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, c["merged"]], check=True)

    def neigh_flush(self) -> None:
        subprocess.run(
            ["ip", "neigh", "flush", "to", self.cfg["mgmt_ip"], "dev", self.cfg["bridge"]],
            check=False,
            capture_output=True,
        )

    def kill_leftovers(self) -> None:
        """Kill what is left of a boot: by netns and by the node's cgroup (never ourselves)."""
        left = set(cgroups.pids(self.cfg["cluster"], self.cfg["node"])) - {os.getpid()}
        ino = procs.ns_inode(self.cfg["netns_path"])
        if ino is not None:
            left.update(procs.pids_in_netns(ino))
        procs.signal_all(left)

    def boot(self) -> int:
        self.neigh_flush()
        env = {**os.environ, **self.cfg["env"]}
        self.boots += 1
        self.child = subprocess.Popen(self.cfg["nspawn"], env=env, stdin=subprocess.DEVNULL)
        self.state("running")
        self.log(f"boot {self.boots}: nspawn pid {self.child.pid}")
        while True:
            try:
                rc = self.child.wait(timeout=STOP_GRACE_S if self.stopping else None)
                break
            except subprocess.TimeoutExpired:
                self.log("guest did not power off in time: killing it")
                self.child.kill()
                self.kill_leftovers()
        self.log(f"nspawn exited {rc}")
        return rc

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGINT, self.on_term)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        cgroups.enter(self.cfg["cluster"], self.cfg["node"])  # own cgroup: nspawn puts payload/ below it
        self.mount()
        quick_fails = 0
        rc = 0
        while not self.stopping:
            t0 = time.monotonic()
            rc = self.boot()
            self.kill_leftovers()  # nothing of an old boot may linger into the next one
            if self.stopping:
                break
            if rc == REBOOT_EXIT:
                self.state("rebooting")
                continue
            if rc == 0:
                self.log("guest powered off")
                self.state("off", rc=rc)
                return 0
            quick_fails = quick_fails + 1 if time.monotonic() - t0 < QUICK_FAIL_S else 0
            if quick_fails >= MAX_QUICK_FAILS:
                self.log(f"nspawn failed {quick_fails} times in a row: giving up")
                self.state("failed", rc=rc)
                return 1
            self.state("restarting", rc=rc)
            time.sleep(1)
        self.state("stopped", rc=rc)
        return 0


def main() -> int:
    node_dir = Path(sys.argv[1])
    pidfile = node_dir / "supervisor.pid"
    tmp = pidfile.with_name(f".supervisor.pid.{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n")
    tmp.replace(pidfile)  # atomic: a reader never sees it empty (the launcher has already put our pid there)
    try:
        return Supervisor(node_dir).run()
    finally:
        (node_dir / "supervisor.pid").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
