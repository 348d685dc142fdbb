"""Admission policy: which nodes join the pool, which are drained, which are held for review.

`decide` (pure once given the trusted keys): from the plan, the node's certificates and its history it
returns admit, drain or hold. A node is admitted only with, for every tier in `certification.join_tiers`,
a certificate that verifies (`records.certificate.verify`: signed by a trusted key, unchanged, not
expired; unsigned and untrusted certificates are refused) for the node's CURRENT expectation digest,
whose verdict is pass; the newest such certificate of a tier counts, so a later failure outweighs an
earlier pass. A node that flaps (fail, pass, fail within `certification.flap_window_hours`) is held for
review: drained with `HOLD_REASON` and left drained, whatever later certificates say, until an operator
overrides (`clusterforge pool admit NODE --force`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from clusterforge.pool.base import HOLD_REASON, PoolManager, reason_for_checks, sanitize_reason
from clusterforge.records import certificate as certmod
from clusterforge.records import signing
from clusterforge.records._util import parse_iso, utcnow
from clusterforge.records.signing import TrustedKeys
from clusterforge.remote.tools import missing_tools

Action = Literal["admit", "drain", "hold"]
TIER_ORDER = {"quick": 0, "full": 1, "burnin": 2}
DEFAULT_FLAP_WINDOW_H = 24.0


@dataclass(frozen=True)
class HistoryEvent:
    """A certification outcome of the node (`pass` | `fail` | `error`) or an operator action (`hold` |
    `override`), at a time."""

    at: datetime
    kind: str
    detail: str = ""


@dataclass(frozen=True)
class Decision:
    node: str
    action: Action
    reason: str
    certificates: tuple[Mapping[str, Any], ...] = ()  # for admit: the certificate of each required tier
    details: tuple[str, ...] = field(default_factory=tuple)
    failed: tuple[str, ...] = ()  # for a drain on failed checks: their ids (a layer above names the action)


def _plan_node(plan_doc: Mapping[str, Any], node: str) -> Mapping[str, Any] | None:
    return next((n for n in plan_doc.get("nodes", []) if n.get("name") == node), None)


def since_override(history: Iterable[HistoryEvent]) -> list[HistoryEvent]:
    """Events after the last operator override (an override clears holds and flapping history)."""
    events = sorted(history, key=lambda e: e.at)
    last = max((i for i, e in enumerate(events) if e.kind == "override"), default=-1)
    return events[last + 1 :]


def is_flapping(history: Iterable[HistoryEvent], now: datetime, window_hours: float) -> bool:
    """fail → pass → fail (an `error` counts as not passing) within the window."""
    start = now - timedelta(hours=window_hours)
    outcomes = [
        e.kind == "pass" for e in history if e.kind in ("pass", "fail", "error") and start <= e.at <= now
    ]
    runs = [o for i, o in enumerate(outcomes) if i == 0 or o != outcomes[i - 1]]  # collapse repeats
    return any(not a and b and not c for a, b, c in zip(runs, runs[1:], runs[2:], strict=False))


def _issued(cert: Mapping[str, Any]) -> datetime:
    try:
        return certmod.parse_ts(str(cert.get("issued_at")))
    except ValueError:
        return datetime.min.replace(tzinfo=utcnow().tzinfo)


def _tier_verdict(
    node: str,
    tier: str,
    digest: str,
    certs: Sequence[Mapping[str, Any]],
    now: datetime,
    trusted: TrustedKeys,
) -> tuple[Mapping[str, Any] | None, str]:
    """The certificate that admits `node` for `tier`, or None and why not."""
    mine = sorted(
        (c for c in certs if c.get("node") == node and c.get("tier") == tier), key=_issued, reverse=True
    )
    if not mine:
        return None, f"no {tier} certificate"
    checked = [(c, certmod.verify(c, trusted, now=now)) for c in mine]
    current = [c for c, res in checked if res.ok and c.get("expectation_digest") == digest]
    if current:
        latest = current[0]
        if latest.get("verdict") == "pass":
            return latest, ""
        failed = [str(ch.get("id")) for ch in latest.get("checks", []) if ch.get("status") != "pass"]
        gone = missing_tools(str(ch.get("message") or "") for ch in latest.get("checks", []))
        if gone and latest.get("verdict") == "error":  # a tool was missing: not a hardware failure
            return None, f"{tier}: " + "; ".join(gone)
        what = "failed" if latest.get("verdict") == "fail" else "could not run"
        if not failed:
            return None, f"{tier}: {latest.get('verdict')}"
        return None, f"{tier}: {what} " + ",".join(sorted(failed))
    if any(res.ok for _, res in checked):
        return None, f"{tier} certificate is for an old expectation digest (the plan changed): re-certify"
    reasons = checked[0][1].reasons
    if any(r.startswith("expired") for r in reasons):
        return None, f"{tier} certificate expired"
    return None, f"{tier} certificate invalid ({reasons[0]})"


def decide(
    node: str,
    plan_doc: Mapping[str, Any],
    certs: Iterable[Mapping[str, Any]],
    history: Iterable[HistoryEvent],
    now: datetime | None = None,
    *,
    trusted: TrustedKeys | None = None,
) -> Decision:
    """Admit, drain or hold `node`. `trusted`: key ID → public key (default: `signing.trusted_keys()`, read
    from the records directory; with it given, no I/O)."""
    now = now or utcnow()
    pn = _plan_node(plan_doc, node)
    if pn is None:
        return Decision(node, "drain", sanitize_reason("clusterforge: not in the plan"))
    policy = plan_doc.get("certification") or {}
    tiers = [str(t) for t in policy.get("join_tiers") or ["quick"]]
    window = float(policy.get("flap_window_hours") or DEFAULT_FLAP_WINDOW_H)
    recent = since_override(history)
    if any(e.kind == "hold" for e in recent):
        return Decision(node, "hold", HOLD_REASON, details=("held for review: needs `pool admit --force`",))
    if is_flapping(recent, now, window):
        return Decision(node, "hold", HOLD_REASON, details=(f"fail, pass, fail within {window:g} h",))
    certs = list(certs)
    keys = signing.trusted_keys() if trusted is None else trusted
    admitting: list[Mapping[str, Any]] = []
    problems: list[str] = []
    for tier in tiers:
        cert, why = _tier_verdict(node, tier, str(pn.get("expectation_digest")), certs, now, keys)
        if cert is None:
            problems.append(why)
        else:
            admitting.append(cert)
    if problems:
        failed = [p for p in problems if ": failed " in p]
        failed_ids: tuple[str, ...] = ()
        if len(problems) == 1 and failed:
            tier, ids = failed[0].split(": failed ", 1)
            failed_ids = tuple(ids.split(","))
            reason = reason_for_checks(failed_ids)
        else:
            reason = sanitize_reason("clusterforge: " + "; ".join(problems))
        return Decision(node, "drain", reason, details=tuple(problems), failed=failed_ids)
    return Decision(node, "admit", "certified " + ",".join(tiers), certificates=tuple(admitting))


def apply(decision: Decision, manager: PoolManager, *, store: Any | None = None, force: bool = False) -> str:
    """Carry out a decision through a pool manager; record it as a pool event when `store` is given.

    Returns what happened: `admitted`, `drained`, `held`, or `left drained by someone else`.
    """
    node = decision.node
    if decision.action == "admit":
        best = max(decision.certificates, key=lambda c: TIER_ORDER.get(str(c.get("tier")), -1))
        manager.admit(node, best, force=force)
        outcome, action, reason = "admitted", "admit", decision.reason
    else:
        reason = HOLD_REASON if decision.action == "hold" else decision.reason
        changed = manager.drain(node, reason)
        outcome = (
            ("held" if decision.action == "hold" else "drained")
            if changed
            else "left drained by someone else"
        )
        action = decision.action
    if store is not None:
        store.record_pool_event(
            node,
            action,
            reason
            if outcome != "left drained by someone else"
            else f"{reason} (not applied: drained by someone else)",
        )
    return outcome


def history_from_store(store: Any, node: str, since: datetime | None = None) -> list[HistoryEvent]:
    """Certification outcomes (finished certify runs only) and hold/override events of `node`."""
    events = [
        HistoryEvent(parse_iso(r.recorded_at), r.verdict, r.run_id)
        for r in store.node_history(node, kind="certify", since=since)
        if r.recorded_at
    ]
    events += [
        HistoryEvent(parse_iso(e.at), e.action, e.reason or "")
        for e in store.pool_events(node, since=since)
        if e.action in ("hold", "override")
    ]
    return sorted(events, key=lambda e: e.at)
