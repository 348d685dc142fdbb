"""The `link_counters` part of a node's desired state: the link-health counter limits and the sampling
window its rails are certified with (validators/test_link_counters.py reads only this).

Compiled once per SKU from the counter policy (spec/catalog/network/counter_policy.yaml: the fabric type's
defaults, then the policy's SKU entry) and the spec's `certification.link_counters` (site-wide, then the
SKU's), each limit with its `source`, `read` and `max_per_s`; per-priority names stay templates
(``rx_prio{prio}_pause``), filled in by the validator with the rail's lossless priority (the rail's desired
`qos`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterforge.spec.counter_policy import compiled


def counters_input(certification: Mapping[str, Any]) -> dict[str, Any]:
    """What of the plan's certification policy the link-counter state reads: `link_counters`, as plain
    data (site-wide `window_s` and `limits`, per SKU name the same)."""
    lc = certification.get("link_counters") or {}
    return {
        "window_s": lc.get("window_s"),
        "limits": dict(lc.get("limits") or {}),
        "skus": {str(k): dict(v) for k, v in (lc.get("skus") or {}).items()},
    }


def fabric_type(sku: Mapping[str, Any]) -> str:
    """The compute fabric type of a SKU (the plan's SKU entry): its compute NICs' link layer decides it."""
    return "roce" if sku["compute_nics"]["link_layer"] == "Ethernet" else "infiniband"


def counters_desired(sku: Mapping[str, Any], site: Mapping[str, Any]) -> dict[str, Any]:
    """The link-counter state of a node of ``sku`` (the plan's SKU entry); ``site``: `counters_input`."""
    return compiled(fabric_type(sku), str(sku["name"]), site)
