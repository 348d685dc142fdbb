"""The lab's local apt repository: http://10.244.0.1:8780/nvidia (suite stable, component main).

The simulator helper builds the .debs and the index (`clusterforge.lab.sim.repo.build_repo(dest) -> Path`);
the host serves `<state>/apt/` with Python's http.server, bound to the management bridge only.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import sys
from pathlib import Path

from clusterforge.lab import config, procs

log = logging.getLogger(__name__)
BUILDER = "clusterforge.lab.sim.repo"


class AptRepo:
    def __init__(self, state: Path) -> None:
        self.root = state / "apt"
        self.pidfile = state / "apt-http.pid"
        self.logfile = state / "apt-http.log"

    @property
    def url(self) -> str:
        return f"http://{config.HOST_IP}:{config.REPO_PORT}/nvidia"

    def build(self) -> Path | None:
        mod = importlib.import_module(BUILDER)
        dest = self.root / "nvidia"
        dest.mkdir(parents=True, exist_ok=True)
        # Rebuild only when the simulator's packages change: a rebuilt repository has new hashes (and key),
        # so nodes that kept their package lists would meet "Hash Sum mismatch" as with a re-signed mirror.
        src = Path(str(mod.__file__)).parent
        digest = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(src.glob("*.py")))).hexdigest()
        stamp = dest / ".built-from"
        if stamp.exists() and stamp.read_text() == digest and (dest / "dists/stable/Release").exists():
            return dest
        built = Path(mod.build_repo(dest))
        stamp.write_text(digest)
        return built

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.pid() is not None:
            return
        argv = [
            sys.executable,
            "-m",
            "http.server",
            str(config.REPO_PORT),
            "--bind",
            config.HOST_IP,
            "--directory",
            str(self.root),
        ]
        procs.spawn_daemon(argv, self.pidfile, self.logfile)

    def pid(self) -> int | None:
        pid = procs.live_pid(self.pidfile)
        if pid is None:
            return None
        try:
            return pid if b"http.server" in Path(f"/proc/{pid}/cmdline").read_bytes() else None
        except OSError:
            return None

    def stop(self) -> None:
        procs.stop_pid(self.pid(), timeout=3)
        self.pidfile.unlink(missing_ok=True)
