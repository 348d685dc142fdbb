"""After certification: leave the node's passive health check the result it reads (`last-run.json` in the
node's `desired.monitoring.health.state_dir`): the certificate's tier, verdict and expiry, so the check
drains a node whose certificate expired (`passive.certificate_expired`) without asking the controller.

Only a passing certificate updates the file (a failing run drained the node already). Written over ssh
(the run's ssh_config), as a temporary file then renamed; a node that cannot be reached keeps its old file
and the report says so: it is never a certification failure.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from clusterforge.records.certificate import parse_ts
from clusterforge.remote.commands import shell

Runner = Callable[[str, str, str], tuple[int, str]]  # (node, remote command, stdin) -> (rc, stderr)


def cache_doc(cert: Mapping[str, Any]) -> dict[str, Any]:
    until = str(cert.get("valid_until"))
    return {
        "node": cert.get("node"),
        "tier": cert.get("tier"),
        "verdict": cert.get("verdict"),
        "run_id": (cert.get("issuer") or {}).get("run_id"),
        "issued_at": cert.get("issued_at"),
        "expires_at": until,
        "expires_at_s": parse_ts(until).timestamp(),
    }


def write_command(state_dir: str) -> str:
    path = f"{state_dir.rstrip('/')}/last-run.json"
    return shell(
        "install -d -m 0700 {} && cat > {} && mv -f {} {}", state_dir, path + ".tmp", path + ".tmp", path
    )


def push(
    plan_doc: Mapping[str, Any], certs: Mapping[str, Mapping[str, Any] | None], run: Runner, jobs: int = 16
) -> dict[str, str]:
    """Write each passing certificate's cache on its node; node -> what happened."""
    dirs = {
        n["name"]: h["state_dir"]
        for n in plan_doc["nodes"]
        if (h := ((n.get("desired") or {}).get("monitoring") or {}).get("health"))
    }
    todo = {n: c for n, c in certs.items() if c and c.get("verdict") == "pass" and n in dirs}

    def one(node: str) -> tuple[str, str]:
        text = json.dumps(cache_doc(todo[node]), sort_keys=True) + "\n"
        rc, err = run(node, write_command(dirs[node]), text)
        return node, "cached" if rc == 0 else f"not cached (rc {rc}: {err.strip()[:120]})"

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo) or 1))) as ex:
        return dict(ex.map(one, sorted(todo)))


def ssh_runner(config: Path) -> Runner:
    from clusterforge.remote.ssh import ssh_argv

    def run(node: str, command: str, stdin: str) -> tuple[int, str]:
        try:
            p = subprocess.run(
                ssh_argv(node, command, config=config),
                input=stdin,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 255, str(exc)
        return p.returncode, p.stderr

    return run
