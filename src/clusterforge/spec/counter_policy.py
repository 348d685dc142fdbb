"""The link-counter policy and its merge with a site's overrides.

The policy (``catalog/network/counter_policy.yaml``) names the counters a node's rails are judged on, per
fabric type (``infiniband``, ``roce``): where a node shows each one (``read``), its limit in increments per
second (``max_per_s``; null = measured and reported, not judged) and that limit's ``source``; a SKU entry
overrides its fabric type's limits and the sampling window (``window_s``). A site overrides either in its
spec, ``certification.link_counters`` (site-wide, then per SKU).

Pure: the policy and the spec's section in, plain values out. The plan calls `compiled` once per SKU and
writes the result into each node's desired state (plan/desired_counters.py); the validator reads it from
there (`from_desired`) and `clusterforge.fabric.counters` judges readings against it. Names of per-priority
counters stay templates (``rx_prio{prio}_pause``) until a rail's lossless priority is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

FABRIC_TYPES = ("infiniband", "roce")
DEFAULT_WINDOW_S = 5.0
PRIO = "{prio}"  # the lossless priority in a per-priority counter's name
SPEC_PATH = "certification.link_counters"  # where a spec overrides the policy


@dataclass(frozen=True)
class Limit:
    max_per_s: float | None
    source: str
    read: str = ""  # where a node shows it: "counters" / "hw_counters" (the port's sysfs dirs), "ethtool"


@cache
def _policy_text() -> str:
    root = resources.files("clusterforge.spec") / "catalog" / "network"
    return (root / "counter_policy.yaml").read_text(encoding="utf-8")


def default_policy() -> dict[str, Any]:
    """The packaged policy, parsed afresh (the caller may change it)."""
    doc = yaml.safe_load(_policy_text())
    if not isinstance(doc, dict):
        raise RuntimeError("counter_policy.yaml is not a mapping")
    return doc


def _rate(value: Any) -> float | None:
    return None if value is None else float(value)


def policy_limits(
    fabric_type: str, sku: str = "", policy: Mapping[str, Any] | None = None
) -> dict[str, Limit]:
    """The policy's limits of ``fabric_type`` (names as templates): its defaults, then the SKU entry's."""
    doc = policy if policy is not None else default_policy()
    merged: dict[str, Any] = dict(doc.get(fabric_type) or {})
    if sku:
        merged.update(((doc.get("skus") or {}).get(sku) or {}).get(fabric_type) or {})
    return {
        str(name): Limit(_rate(v.get("max_per_s")), str(v.get("source", "")), str(v.get("read", "")))
        for name, v in merged.items()
        if isinstance(v, dict)
    }


def counter_names(fabric_type: str, sku: str = "", policy: Mapping[str, Any] | None = None) -> list[str]:
    """The counters the policy judges on ``fabric_type`` (for ``sku``), ``{prio}`` kept, in policy order."""
    return list(policy_limits(fabric_type, sku, policy))


def limits(
    fabric_type: str,
    sku: str = "",
    overrides: Mapping[str, float | None] | None = None,
    *,
    lossless_prio: int = 3,
    policy: Mapping[str, Any] | None = None,
) -> dict[str, Limit]:
    """The policy's limits with per-priority names at ``lossless_prio``; ``overrides`` (formatted names, or
    templates) replace a limit's value with source "override"."""
    out = {
        name.format(prio=lossless_prio): lim for name, lim in policy_limits(fabric_type, sku, policy).items()
    }
    for name, value in (overrides or {}).items():
        key = name.format(prio=lossless_prio)
        out[key] = Limit(_rate(value), "override", out[key].read if key in out else "")
    return out


def window_s(sku: str = "", policy: Mapping[str, Any] | None = None) -> float:
    """Seconds between the two readings: the SKU's `window_s` in the policy, else the policy's, else 5."""
    doc = policy if policy is not None else default_policy()
    sku_entry = (doc.get("skus") or {}).get(sku) or {}
    value = sku_entry.get("window_s", doc.get("window_s", DEFAULT_WINDOW_S))
    seconds = float(value)
    if seconds <= 0:
        raise ValueError(f"counter policy window_s must be positive; got {value!r}")
    return seconds


def compiled(
    fabric_type: str,
    sku: str,
    site: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a node of ``sku`` on ``fabric_type`` is judged by, as plain JSON: ``{"window_s": seconds,
    "limits": {name: {"read", "max_per_s", "source"}}}``, names as templates.

    Later wins, per limit: the policy's fabric-type defaults, its SKU entry, the spec's site-wide
    ``certification.link_counters.limits``, its ``skus.<sku>.limits``; each limit's ``source`` names the
    layer that set it (the policy entry's own source text, or the spec path). The window likewise: policy,
    policy SKU entry, spec, spec SKU. ``site``: the spec's ``certification.link_counters`` (plain data, as
    the spec validated it); a site-wide limit of a counter this fabric type does not have is another fabric
    type's and left out."""
    site = site or {}
    own = (site.get("skus") or {}).get(sku) or {}
    lim = policy_limits(fabric_type, sku, policy)
    layers = (
        (f"spec {SPEC_PATH}.limits", site.get("limits") or {}),
        (f"spec {SPEC_PATH}.skus.{sku}.limits", own.get("limits") or {}),
    )
    for source, layer in layers:
        for name, value in layer.items():
            if name in lim:
                lim[name] = Limit(_rate(value), source, lim[name].read)
    window = window_s(sku, policy)
    for value in (site.get("window_s"), own.get("window_s")):
        if value is not None:
            window = float(value)
    return {
        "window_s": window,
        "limits": {
            name: {"read": v.read, "max_per_s": v.max_per_s, "source": v.source}
            for name, v in sorted(lim.items())
        },
    }


def from_desired(section: Mapping[str, Any], lossless_prio: int) -> dict[str, Limit]:
    """The limits of a node's compiled ``link_counters`` (see `compiled`), per-priority names at
    ``lossless_prio``; KeyError / ValueError / TypeError for a section not of that shape."""
    out: dict[str, Limit] = {}
    for name, v in dict(section["limits"]).items():
        out[str(name).replace(PRIO, str(int(lossless_prio)))] = Limit(
            _rate(v["max_per_s"]), str(v["source"]), str(v["read"])
        )
    return out
