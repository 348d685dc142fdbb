"""`clusterforge fabric check --collect`: record a discovery from the nodes themselves, then compare it with
the plan (`fabric.check`) as a recorded one would be.

What is collected: each RoCE node's LLDP view of its rails (`lldpctl -f json`, from the lldpd the lldpd
role installs), written as `<node>.json` into the discovery folder, the form `fabric.discovery` reads.
Over the inventory's SSH settings (`remote.ssh`: site layer, jump hosts, strict host keys), one session
per node, in parallel. A node that cannot be reached or whose lldpctl fails is listed with the reason and
left out of the discovery: its links count as not checked, never as miscabled. InfiniBand subnets are read
with `ibnetdiscover`/`iblinkinfo` where the subnet manager runs; record that output into the same folder.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.remote.ssh import reachable, run_on, ssh_setup

LLDP_COMMAND = "lldpctl -f json"
LLDP_TIMEOUT_S = 30


@dataclass
class Collected:
    folder: Path
    written: list[str] = field(default_factory=list)  # nodes whose view is in the folder
    missed: dict[str, str] = field(default_factory=dict)  # node -> why not


def lldp_nodes(plan_doc: dict[str, Any]) -> list[str]:
    """The plan's nodes on a RoCE fabric (LLDP is how their rails see their leaves)."""
    return [n["name"] for n in plan_doc["nodes"] if n.get("fabric_type") == "roce"]


def collect(
    plan_doc: dict[str, Any], inventory: Path, folder: Path, nodes: list[str] | None = None
) -> Collected:
    names = lldp_nodes(plan_doc) if nodes is None else nodes
    folder.mkdir(parents=True, exist_ok=True)
    out = Collected(folder)
    if not names:
        return out
    ssh = ssh_setup(plan_doc, inventory, names)

    def one(node: str) -> tuple[str, str | None, str]:
        ok, why = reachable(ssh, node)
        if not ok:
            return node, None, f"unreachable: {why}"
        try:
            p = run_on(ssh, node, LLDP_COMMAND, LLDP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return node, None, f"{LLDP_COMMAND}: no answer within {LLDP_TIMEOUT_S} s"
        if p.returncode != 0 or not p.stdout.strip():
            err = (p.stderr.strip().splitlines() or [f"exit {p.returncode}, no output"])[-1]
            return node, None, f"{LLDP_COMMAND}: {err}"
        return node, p.stdout, ""

    try:
        with ThreadPoolExecutor(max_workers=min(32, len(names))) as pool:
            results = list(pool.map(one, names))
    finally:
        ssh.close()
    for node, text, why in results:
        if text is None:
            out.missed[node] = why
            (folder / f"{node}.json").unlink(missing_ok=True)  # never an older view in its place
            continue
        (folder / f"{node}.json").write_text(text)
        out.written.append(node)
    return out
