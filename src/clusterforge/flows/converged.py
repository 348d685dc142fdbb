"""Which nodes a provision can leave alone: those a read shows are as their last provision left them.

A node is converged when its latest provision (of this plan, this clusterforge version, these roles and
this inventory: `clusterforge.drift.applied.fast_or_deep`) recorded its applied state, and the read the
fast drift makes finds nothing changed since: every managed file, package, unit and module reads as it was
applied, and every quick validator — each declared setting against the plan's desired state — passes
(the same reads and rules as `clusterforge drift`, without its check run). Everything else runs site.yml:
no applied state, another plan, other roles or inventory, anything changed, any check that could not run,
an unreachable node. A read never decides that a node is fine when it could not read it.

This is ansible-pull's `--only-if-changed` idea at node granularity, with the node's own state (not only
the repository) as the test. `clusterforge provision --full` runs site.yml everywhere regardless.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.flows.drift import drift

#: items of these sources do not say anything about what site.yml would change (a certificate issued for
#: another expectation digest: certification's business)
NOT_STATE = frozenset({"records"})


@dataclass(frozen=True)
class Converged:
    """`nodes`: node -> what the read found (converged); `run`: node -> why site.yml runs on it."""

    nodes: dict[str, str]
    run: dict[str, str]


def converged(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None,
    env: dict[str, str] | None,
    console: Console | None = None,
    scheduler: Any | None = None,
) -> Converged:
    """Read the nodes `limit` selects (over SSH, or with `scheduler` through the pool's engine as drift
    --via does) and split them into converged ones and those site.yml must run on, each with its reason."""
    report = drift(plan_doc, inventory, limit, env=env, console=console, scheduler=scheduler, check_run=False)
    errors = report.node_errors()
    nodes: dict[str, str] = {}
    run: dict[str, str] = {}
    per_node = report.by_node()
    for host in report.nodes:
        items = [i for i in per_node.get(host, []) if i.source not in NOT_STATE]
        if host in report.deep:
            run[host] = report.deep[host]
        elif host in report.unreachable:
            run[host] = "unreachable for the read"
        elif items:
            run[host] = f"{len(items)} difference(s): " + "; ".join(
                f"{i.setting}: expected {i.expected}, found {i.actual}" for i in items[:3]
            )
        elif host in errors:
            run[host] = "could not read all of it: " + "; ".join(errors[host][:2])
        elif host not in report.compared or not report.checked.get(host):
            # no evidence is not a pass: a node must have been read and checked to be left alone
            run[host] = "not read: no applied-state read or no quick-check results came back"
        else:
            nodes[host] = "read as its last provision applied it; every quick check passes"
    return Converged(nodes, run)
