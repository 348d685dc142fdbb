"""Window and repeat-offender rules: from timestamped events of one node to the action to take.

Pure: no clock, no I/O. `decide(check, node, events, now)` looks at the node's events of that check up to
`now`; any event at all gives the check's own action, and a rule whose `count` events (same component and
code, or same node and code) fall within its trailing window `(now - window_s, now]` escalates to the rule's
action. The worst action wins; the drain reason names the check, the action and the rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from clusterforge.checks.model import Action, Check, Rule, rank
from clusterforge.pool.base import sanitize_reason


@dataclass(frozen=True)
class Event:
    """One occurrence of a check's failure: `component` e.g. "gpu3" or "rail2", `code` e.g. "79"."""

    check: str
    node: str
    at: datetime
    component: str = ""
    code: str = ""


@dataclass(frozen=True)
class Decision:
    check: str
    node: str
    action: Action
    events: int  # events of this check on this node up to `now`
    rule: Rule | None = None  # the rule that escalated, if any
    ticket: str = ""
    next_steps: tuple[Action, ...] = ()
    where: str = ""  # the component / code the rule counted

    @property
    def reason(self) -> str:
        """A drain reason (`clusterforge: ...`, safe for every pool manager)."""
        what = f" {self.where}" if self.where else ""
        why = f" ({self.rule.short()})" if self.rule else ""
        then = f" then {'/'.join(self.next_steps)}" if self.next_steps else ""
        ticket = f" +{self.ticket} ticket" if self.ticket else ""
        return sanitize_reason(f"clusterforge: {self.check}{what}: {self.action}{then}{ticket}{why}")


def _key(e: Event, rule: Rule) -> tuple[str, ...]:
    return (e.component, e.code) if rule.scope == "component" else (e.code,)


def _label(key: tuple[str, ...]) -> str:
    return " ".join(k for k in key if k)


def decide(check: Check, node: str, events: Iterable[Event], now: datetime) -> Decision | None:
    """The action for `node` on `check` given its events; None when the check has no event there."""
    mine = sorted(
        (e for e in events if e.check == check.id and e.node == node and e.at <= now), key=lambda e: e.at
    )
    if not mine:
        return None
    last = mine[-1]
    best = Decision(
        check.id,
        node,
        check.action,
        len(mine),
        ticket=check.ticket,
        next_steps=check.remedies,
        where=_label((last.component, last.code)),
    )
    for rule in check.rules:
        start = now - timedelta(seconds=rule.window_s)
        groups: dict[tuple[str, ...], int] = defaultdict(int)
        for e in mine:
            if e.at > start:
                groups[_key(e, rule)] += 1
        hit = [k for k, n in sorted(groups.items()) if n >= rule.count]
        if hit and rank(rule.action) > rank(best.action):
            later = tuple(a for a in check.remedies if rank(a) > rank(rule.action))
            best = Decision(
                check.id,
                node,
                rule.action,
                len(mine),
                rule,
                rule.ticket or check.ticket,
                later,
                _label(hit[0]),
            )
    return best
