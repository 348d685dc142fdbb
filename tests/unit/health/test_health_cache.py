"""The certification result left on the node for the passive health check (flows/health_cache)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clusterforge.flows import health_cache
from clusterforge.health import nodecheck

CERT = {
    "node": "n1",
    "tier": "quick",
    "verdict": "pass",
    "issued_at": "2026-03-01T12:00:00Z",
    "valid_until": "2026-03-31T12:00:00Z",
    "issuer": {"run_id": "r1"},
}


def _plan(state_dir: str) -> dict:
    return {
        "nodes": [
            {"name": n, "desired": {"monitoring": {"health": {"state_dir": state_dir}}}} for n in ("n1", "n2")
        ]
    }


def test_only_passing_certificates_are_pushed() -> None:
    calls = []

    def run(node: str, cmd: str, stdin: str) -> tuple[int, str]:
        calls.append((node, cmd, json.loads(stdin)))
        return 0, ""

    out = health_cache.push(
        _plan("/var/lib/clusterforge/health"), {"n1": CERT, "n2": {**CERT, "verdict": "fail"}}, run
    )
    assert out == {"n1": "cached"}
    ((node, cmd, doc),) = calls
    assert node == "n1" and doc["expires_at_s"] == 1_774_958_400.0 and doc["run_id"] == "r1"
    assert "last-run.json" in cmd


def test_unreachable_node_is_reported_not_raised() -> None:
    out = health_cache.push(_plan("/x"), {"n1": CERT}, lambda n, c, s: (255, "ssh: connect refused\n"))
    assert out == {"n1": "not cached (rc 255: ssh: connect refused)"}


def test_the_command_writes_what_the_check_reads(tmp_path: Path) -> None:
    state = tmp_path / "dir with 'quote"
    doc = json.dumps(health_cache.cache_doc(CERT))
    subprocess.run(["sh", "-c", health_cache.write_command(str(state))], input=doc, text=True, check=True)
    assert json.loads((state / "last-run.json").read_text())["expires_at_s"] == 1_774_958_400.0
    env = nodecheck.Env(root="/", now=1_774_958_400.0 + 1)
    res = nodecheck.Result()
    nodecheck.certificate({"state_dir": str(state)}, env, {"held": set(), "held_now": []}, res)
    assert res.holding == {"passive.certificate_expired"}
