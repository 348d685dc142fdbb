"""The registry's part the node-side health check needs, as JSON: for each passive check it runs, the
action, remedies, ticket, Xid codes and repeat-offender rules; and the Xid policy's classes.

`clusterforge checks node-policy --output playbooks/roles/monitoring/files/health-policy.json` writes the
file the monitoring role installs (a unit test keeps it equal to the registry, as docs/checks.md).
"""

from __future__ import annotations

import json
from typing import Any

from clusterforge.checks.registry import by_id

#: the passive checks `clusterforge.health.nodecheck` runs; between two decisions of the same action the
#: earlier here names the drain (the Xid says more than the GPU count it caused)
NODE_CHECKS = (
    "passive.xid.79",
    "passive.xid.48",
    "passive.xid.64",
    "passive.xid.fatal",
    "passive.row_remap_failure",
    "passive.gpu_lost",
    "passive.fabric_manager",
    "passive.rail_link_down",
    "passive.row_remap_pending",
    "passive.rail_link_flap",
    "passive.certificate_expired",
    "passive.xid.warn",
    "passive.xid.application",
    "passive.certificate_expiring",
)


def check_policy(check_id: str) -> dict[str, Any]:
    c = by_id()[check_id]
    return {
        "action": c.action,
        "remedies": list(c.remedies),
        "ticket": c.ticket,
        "xids": list(c.xids),
        "rules": [
            {
                "count": r.count,
                "window_s": r.window_s,
                "action": r.action,
                "scope": r.scope,
                "ticket": r.ticket,
            }
            for r in c.rules
        ],
    }


def xid_policy() -> dict[str, Any]:
    """Xid codes by class (certify/xid_policy.yaml) and the class of a code it does not list."""
    from clusterforge.certify.xid import policy

    p = policy()
    classes: dict[str, list[int]] = {}
    for code in sorted(p.rules):
        classes.setdefault(p.classify_code(code), []).append(code)
    return {"default": p.default, "classes": classes}


def node_policy() -> dict[str, Any]:
    return {
        "checks": {cid: check_policy(cid) for cid in NODE_CHECKS},
        "order": list(NODE_CHECKS),
        "xid_policy": xid_policy(),
    }


def render() -> str:
    return json.dumps(node_policy(), indent=1, sort_keys=True) + "\n"
