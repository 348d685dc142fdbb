"""Before/after of a task's change, from its result: what `--check --diff` and drift report per task."""

from __future__ import annotations

from typing import Any

_SERVICE_MODULES = ("systemd_service", "systemd", "service")
#: the ActiveState a unit has after `state: X`
_ACTIVE_AFTER = {"started": "active", "stopped": "inactive", "restarted": "active (restarted)"}


def task_diff(res: dict[str, Any], action: str) -> list[dict[str, Any]]:
    """The task's diffs (a loop's: those of its changed items); for a changed service task, which Ansible's
    service modules report without any, a before/after of the unit's active and enablement state built
    from the result (`status` holds the unit's properties read before the change), so --check --diff names
    both values."""
    diff = res.get("diff")
    diffs = list(diff) if isinstance(diff, list) else ([diff] if diff else [])
    items = res.get("results")
    if not diffs and isinstance(items, list):  # a loop: its changed items' diffs, in item order
        changed = [item for item in items if isinstance(item, dict) and item.get("changed")]
        return [d for item in changed for d in task_diff(item, action)]
    if diffs or not res.get("changed") or action.rsplit(".", 1)[-1] not in _SERVICE_MODULES:
        return diffs
    raw = res.get("status")
    status: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = str(res.get("name") or status.get("Id") or "unit")
    before, after = [], []
    state, active = res.get("state"), str(status.get("ActiveState", "unknown"))
    running = active in ("active", "activating", "reloading")
    if (
        state in ("restarted", "reloaded")
        or (state == "started" and not running)
        or (state == "stopped" and running)
    ):
        before.append(f"{name}: {active}")
        after.append(f"{name}: {_ACTIVE_AFTER.get(str(state), 'active (reloaded)')}")
    if isinstance(res.get("enabled"), bool):
        was, want = str(status.get("UnitFileState", "unknown")), "enabled" if res["enabled"] else "disabled"
        if was != want:
            before.append(f"{name} at boot: {was}")
            after.append(f"{name} at boot: {want}")
    if not before:
        return []
    return [
        {
            "before_header": f"{name} (before)",
            "before": "\n".join(before) + "\n",
            "after_header": f"{name} (after)",
            "after": "\n".join(after) + "\n",
        }
    ]
