"""Drain reasons from the registry: failed checks of a node -> the registry's decision (action, remedies,
repeat-offender rules via `rules.decide`) -> a `clusterforge:` reason naming the check and the action.

A failed check id may carry a parameter (`rdma.port[rail2]`): the registry knows the check, the parameter
is the component its rules count (one rail's failures, one GPU's). Ids the registry does not know are
counted in the reason's "+N more". `history`: (time, failed check ids) of the node's earlier runs, so a
repeat offender escalates (the same fatal failure twice in 24 h -> service).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from clusterforge.checks.model import SEVERITIES, rank
from clusterforge.checks.registry import UnknownCheck, base_id, get
from clusterforge.checks.rules import Decision, Event, decide
from clusterforge.pool.base import MAX_REASON_LEN, reason_for_checks, sanitize_reason

_PARAM = re.compile(r"\[(?P<p>.*)\]$")


def _event(check_id: str, node: str, at: datetime) -> Event | None:
    try:
        c = get(check_id)
    except UnknownCheck:
        return None
    m = _PARAM.search(check_id)
    return Event(c.id, node, at, component=m.group("p") if m else "")


def decisions(
    node: str,
    failed: Iterable[str],
    now: datetime,
    history: Iterable[tuple[datetime, Iterable[str]]] = (),
) -> list[Decision]:
    """The registry's decision for each failed check the registry knows, worst first."""
    ids = list(dict.fromkeys(failed))
    events = [e for cid in ids if (e := _event(cid, node, now))]
    events += [e for at, past in history if at < now for cid in past if (e := _event(cid, node, at))]
    out = []
    for cid in dict.fromkeys(base_id(i) for i in ids):
        try:
            d = decide(get(cid), node, events, now)
        except UnknownCheck:
            continue
        if d is not None:
            out.append(d)
    # worst action first; between equal actions the more severe check names the drain
    return sorted(out, key=lambda d: (-rank(d.action), SEVERITIES.index(get(d.check).severity)))


def drain_reason(
    node: str,
    failed: Iterable[str],
    now: datetime,
    history: Iterable[tuple[datetime, Iterable[str]]] = (),
) -> str:
    """`clusterforge: <check> <component>: <action> then <remedies> [(rule)] (+N more: ids)`; with no check
    the registry knows, `reason_for_checks` (`clusterforge: failed a,b`)."""
    ids = list(dict.fromkeys(failed))
    ds = decisions(node, ids, now, history)
    if not ds:
        return reason_for_checks(ids)
    worst = ds[0]
    named = [i for i in ids if base_id(i) == worst.check]
    rest = [i for i in ids if base_id(i) != worst.check] + named[1:]
    if not rest:
        return worst.reason
    more = f" (+{len(rest)} more: {','.join(rest)})"
    text = worst.reason + more
    if len(text) > MAX_REASON_LEN:
        text = worst.reason + f" (+{len(rest)} more)"
    return sanitize_reason(text)
