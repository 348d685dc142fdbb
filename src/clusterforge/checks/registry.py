"""Look-ups in the check registry (`catalog.ALL`), the Xid → check mapping, and its own consistency."""

from __future__ import annotations

import re
from functools import lru_cache

from clusterforge.checks.catalog import ALL, REFS
from clusterforge.checks.model import ACTIONS, Check, rank

_PARAM = re.compile(r"\[.*\]$")


class UnknownCheck(KeyError):
    pass


def base_id(check_id: str) -> str:
    """`rdma.port[rail0]` → `rdma.port` (the registry knows checks, not their parameters)."""
    return _PARAM.sub("", check_id)


@lru_cache(maxsize=1)
def by_id() -> dict[str, Check]:
    out: dict[str, Check] = {}
    for c in ALL:
        if c.id in out:
            raise ValueError(f"check registry: {c.id} listed twice")
        out[c.id] = c
    return out


def get(check_id: str) -> Check:
    try:
        return by_id()[base_id(check_id)]
    except KeyError:
        raise UnknownCheck(check_id) from None


def xid_check(xid: int) -> Check:
    """The passive check an Xid event belongs to: its own entry (79, 48, 64) or its policy class."""
    from clusterforge.certify.xid import policy

    for c in ALL:
        if xid in c.xids:
            return c
    return by_id()[f"passive.xid.{policy().classify_code(xid)}"]


def problems() -> list[str]:
    """What is wrong with the registry itself (empty when it is consistent)."""
    out = []
    try:
        by_id()
    except ValueError as exc:
        out.append(str(exc))
    for c in ALL:
        if any(r not in REFS for r in c.refs):
            out.append(f"{c.id}: unknown reference in {c.refs}")
        if c.action not in ACTIONS or any(a not in ACTIONS for a in c.remedies):
            out.append(f"{c.id}: unknown action")
        for r in c.rules:
            if r.count < 1 or r.window_s <= 0:
                out.append(f"{c.id}: rule {r.describe()} needs count >= 1 and a positive window")
            if rank(r.action) <= rank(c.action):
                out.append(f"{c.id}: rule {r.describe()} does not escalate beyond {c.action}")
        if c.source == "passive" and c.mode != "passive":
            out.append(f"{c.id}: a passive check must be mode passive")
    return out
