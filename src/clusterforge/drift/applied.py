"""The fast drift's comparisons (pure): a node's live state against its applied state (as its last
successful provision left it), and an applied desired state against the current plan's.

Applied state: `clusterforge.run.managed.applied_state`, kept in the provision run's node row. Which nodes
can be compared this way, and which need the deep (Ansible check-and-diff) run: `fast_or_deep`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.drift.model import DriftItem

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


def _short(digest: str) -> str:
    return f"sha256 {digest[:12]}"


def _file_items(node: str, applied: Mapping[str, Any], live: Mapping[str, Any]) -> Iterator[DriftItem]:
    for path, want in sorted(applied.items()):
        got = live.get(path)
        if want is None and got is None:
            continue
        if want is None:
            yield DriftItem(
                node, f"file {path}", "absent (as provisioned)", "present", SOURCE, fix=_fix(node)
            )
        elif got is None:
            yield DriftItem(node, f"file {path}", _short(want["sha256"]), "missing", SOURCE, fix=_fix(node))
        else:
            if got.get("sha256") != want.get("sha256"):
                yield DriftItem(
                    node,
                    f"file {path}",
                    f"content as provisioned ({_short(want['sha256'])})",
                    f"changed ({_short(str(got.get('sha256', '')))})",
                    SOURCE,
                    fix=_fix(node),
                )
            for attr in ("mode", "owner", "group"):
                if got.get(attr) != want.get(attr):
                    yield DriftItem(
                        node,
                        f"file {path} {attr}",
                        str(want.get(attr)),
                        str(got.get(attr)),
                        SOURCE,
                        fix=_fix(node),
                    )


def _package_items(node: str, applied: Mapping[str, Any], live: Mapping[str, Any]) -> Iterator[DriftItem]:
    for name, want in sorted(applied.items()):
        got = live.get(name)
        if want is None:
            continue  # not installed when provisioned: nothing the provision asked for
        if got is None:
            yield DriftItem(
                node, f"package {name}", str(want["version"]), "not installed", SOURCE, fix=_fix(node)
            )
            continue
        if got.get("version") != want.get("version"):
            yield DriftItem(
                node, f"package {name}", str(want["version"]), str(got.get("version")), SOURCE, fix=_fix(node)
            )
        if want.get("hold") and got.get("hold") is False:
            yield DriftItem(node, f"package {name} hold", "held", "not held", SOURCE, fix=_fix(node))


def _service_items(
    node: str, applied: Mapping[str, Any], live: Mapping[str, Any], managed: Mapping[str, Any]
) -> Iterator[DriftItem]:
    """The running state of the units a task started/stopped, the enablement of those a task enabled or
    disabled (an applied state without that split: both)."""
    split = "services_active" in managed or "services_enabled" in managed
    for unit, want in sorted(applied.items()):
        got = live.get(unit) or {}
        for attr, what, key in (
            ("active", "state", "services_active"),
            ("enabled", "enabled", "services_enabled"),
        ):
            if split and unit not in (managed.get(key) or ()):
                continue
            if got.get(attr) != want.get(attr):
                yield DriftItem(
                    node,
                    f"service {unit} {what}",
                    str(want.get(attr)),
                    str(got.get(attr, "unknown")),
                    SOURCE,
                    fix=_fix(node),
                )


def compare(node: str, applied: Mapping[str, Any], live: Mapping[str, Any]) -> list[DriftItem]:
    """Every difference between the state recorded right after the node's last successful provision
    (`applied["state"]`) and `live` (the same names read now), as drift items."""
    want = applied.get("state") or {}
    items = [
        *_file_items(node, want.get("files") or {}, live.get("files") or {}),
        *_package_items(node, want.get("packages") or {}, live.get("packages") or {}),
        *_service_items(
            node, want.get("services") or {}, live.get("services") or {}, applied.get("managed") or {}
        ),
    ]
    for mod, loaded in sorted((want.get("modules") or {}).items()):
        if loaded and not (live.get("modules") or {}).get(mod):
            items.append(
                DriftItem(node, f"kernel module {mod}", "loaded", "not loaded", SOURCE, fix=_fix(node))
            )
    return items


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
    plan_doc: Mapping[str, Any], applied: Mapping[str, Mapping[str, Any] | None], version: str
) -> Plan:
    """Split the nodes of `applied` (node -> its applied state, None when unknown): fast when the applied
    state is of this plan and this clusterforge version; deep otherwise, with the reason; a node whose
    desired state changed since is also behind the plan (its items name every changed setting)."""
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
        else:
            fast[node] = dict(rec)
    return Plan(fast, deep, behind)
