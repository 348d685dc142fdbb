"""The fast drift's comparisons (pure): a node's live state against its applied state (as its last
successful provision left it), and an applied desired state against the current plan's.

Applied state: `clusterforge.run.managed.applied_state`, kept in the provision run's node row. Which nodes
can be compared this way, and which need the deep (Ansible check-and-diff) run: `fast_or_deep`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.drift.model import DriftItem
from clusterforge.remote.state_diff import differences

SOURCE = "applied state"
BEHIND = "plan"


@dataclass(frozen=True)
class Plan:
    """Per node, what the drift can do: `fast` (applied state of this plan and version), `deep` (no usable
    applied state, with why), and the items of nodes behind the plan."""

    fast: dict[str, dict[str, Any]]
    deep: dict[str, str]
    behind: list[DriftItem]


def _fix(node: str) -> str:
    return f"clusterforge provision SPEC --limit {node} (or clusterforge drift --fix)"


def compare(node: str, applied: Mapping[str, Any], live: Mapping[str, Any]) -> list[DriftItem]:
    """Every difference between the state recorded right after the node's last successful provision
    (`applied["state"]`) and `live` (the same names read now), as drift items (the rules:
    `clusterforge.remote.state_diff`, shared with the check after a provision's reboot)."""
    return [
        DriftItem(node, d.what, d.expected, d.found, SOURCE, fix=_fix(node))
        for d in differences(applied.get("state") or {}, live, applied.get("managed") or {}, "as provisioned")
    ]


def _leaves(doc: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(doc, Mapping) and doc:
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: doc}


def desired_changes(node: str, applied: Mapping[str, Any], current: Mapping[str, Any]) -> list[DriftItem]:
    """What changed in the node's desired state since it was provisioned: one item per changed setting,
    expected the current plan's value, actual the value it was provisioned with."""
    old, new = _leaves(applied), _leaves(current)
    items = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            items.append(
                DriftItem(
                    node,
                    f"desired {key}",
                    _text(new.get(key, "(not set)")),
                    f"provisioned with {_text(old.get(key, '(not set)'))}",
                    BEHIND,
                    fix=_fix(node),
                )
            )
    return items


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def fast_or_deep(
    plan_doc: Mapping[str, Any],
    applied: Mapping[str, Mapping[str, Any] | None],
    version: str,
    inputs: str | None = None,
) -> Plan:
    """Split the nodes of `applied` (node -> its applied state, None when unknown): fast when the applied
    state is of this plan and this clusterforge version (and, given `inputs`, was applied by these roles
    with this inventory: `clusterforge.run.inputs`); deep otherwise, with the reason; a node whose desired
    state changed since is also behind the plan (its items name every changed setting)."""
    from clusterforge.plan.digest import sha256_of

    desired = {n["name"]: n.get("desired") or {} for n in plan_doc["nodes"]}
    fast: dict[str, dict[str, Any]] = {}
    deep: dict[str, str] = {}
    behind: list[DriftItem] = []
    for node, rec in sorted(applied.items()):
        if not rec:
            deep[node] = (
                "no applied state on record (never provisioned by clusterforge, or the last run failed)"
            )
            continue
        if rec.get("desired_sha256") != sha256_of(desired.get(node, {})):
            behind += desired_changes(node, rec.get("desired") or {}, desired.get(node, {}))
        if rec.get("plan_hash") != plan_doc.get("plan_hash"):
            deep[node] = f"provisioned under plan {str(rec.get('plan_hash'))[:12]}, the plan is now another"
        elif rec.get("version") != version:
            deep[node] = f"provisioned by clusterforge {rec.get('version')}, this is {version}"
        elif inputs is not None and rec.get("inputs_sha256") != inputs:
            deep[node] = (
                "provisioned with other roles or another inventory (digest "
                f"{str(rec.get('inputs_sha256') or 'not recorded')[:12]}, now {inputs[:12]})"
            )
        else:
            fast[node] = dict(rec)
    return Plan(fast, deep, behind)
