"""Read what a provision manages on nodes (names from `clusterforge.run.managed`), one SSH round trip per
node.

The program is `node_state_probe.py`, sent as the stdin of `python3 -`; the names to read are appended to
it as a Python string literal holding JSON (data, never shell text). Its output, parsed by `parse`, is a
node's state: files (sha256, mode, owner, group or absent), packages (version, hold or absent), services
(active, enabled), modules (loaded).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from clusterforge.remote.ssh import booted, reachable, run_on, ssh_setup

READ_TIMEOUT_S = 120
KEYS = ("files", "packages", "services", "modules")


@dataclass(frozen=True)
class StateRead:
    """A node's state as read (`state`), or why it could not be read (`error`)."""

    node: str
    state: dict[str, Any] | None
    error: str = ""


Names = Mapping[str, Iterable[str]]  # "files" | "packages" | "services" | "modules" -> names


def program(names: Names) -> str:
    """The probe's source with the call that reads `names` appended."""
    src = resources.files("clusterforge.remote").joinpath("node_state_probe.py").read_text(encoding="utf-8")
    query = json.dumps({k: sorted(map(str, names.get(k, ()))) for k in KEYS}, sort_keys=True)
    return f"{src}\n\nmain(json.loads({query!r}))\n"


def parse(text: str) -> dict[str, Any]:
    """The probe's JSON document, checked for shape; ValueError when it is not one."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError("no output")
    doc = json.loads(lines[-1])
    if not isinstance(doc, dict) or any(not isinstance(doc.get(k), dict) for k in KEYS):
        raise ValueError(f"not a node state document: {lines[-1][:120]}")
    if not isinstance(doc.get("errors", []), list):
        raise ValueError("errors is not a list")
    return doc


def read_one(ssh: Any, node: str, names: Names, timeout: float = READ_TIMEOUT_S) -> StateRead:
    """Open the node's master, wait until systemd finished starting it (a unit still starting is not a
    changed unit), then read."""
    ok, why = reachable(ssh, node)
    if not ok:
        return StateRead(node, None, f"unreachable: {why}")
    up, state = booted(ssh, node)
    if not up:
        return StateRead(node, None, f"node not booted (systemd {state}): not read")
    try:
        p = run_on(ssh, node, "python3 -", timeout, stdin_text=program(names))
    except subprocess.TimeoutExpired:
        return StateRead(node, None, f"no answer within {timeout:.0f} s")
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or [""])[-1][:200]
        return StateRead(node, None, f"state read exit {p.returncode}: {tail}")
    try:
        return StateRead(node, parse(p.stdout))
    except ValueError as e:
        return StateRead(node, None, f"state read output unreadable: {e}")


def read_states(
    plan_doc: dict[str, Any], inventory: Path, names: Mapping[str, Names], workers: int = 32
) -> dict[str, StateRead]:
    """Each node's state of what `names[node]` names, over the inventory's SSH (host keys checked)."""
    nodes = sorted(names)
    if not nodes:
        return {}
    ssh = ssh_setup(plan_doc, inventory, nodes)
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(nodes)))) as pool:
            reads = list(pool.map(lambda n: read_one(ssh, n, names[n]), nodes))
    finally:
        ssh.close()
    return {r.node: r for r in reads}
