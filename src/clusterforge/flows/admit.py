"""Pool side of certification: drain before a full run, then admit or drain each node on its result.

The decision is the pool's admission policy (`clusterforge.pool.admission.decide`): admitted only with a
passing, verifiable certificate for the node's *current* expectation digest for every tier in
`certification.join_tiers` (flapping nodes are held). A node this run could not check (unreachable, or
its validators cut short) has no new certificate, so an older passing one must not admit it: it is
drained with the reason, whatever its history says. Nor is a node whose checks failed in this run admitted
on a passing certificate of another tier (a failed full run with only `quick` in `join_tiers`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from clusterforge.certify.results import NodeResult
from clusterforge.checks import drain as registry_drain
from clusterforge.pool import admission
from clusterforge.pool.base import sanitize_reason
from clusterforge.records._util import parse_iso, utcnow
from clusterforge.remote.tools import missing_tools

FULL_RUN_REASON = "clusterforge: full certification in progress"
#: how far back a node's earlier failures count for the registry's repeat-offender rules
HISTORY_WINDOW = timedelta(days=30)


def drain_reason(
    res: NodeResult, history: Iterable[tuple[datetime, Iterable[str]]] = (), now: datetime | None = None
) -> str:
    """Why the node is out: unreachable; a missing tool (``cannot certify: <tool> missing (install: role
    R, tag T)``, not a hardware failure — checks that failed are counted after it); else the registry's
    decision on the failed checks (`checks.drain`: the check, its action and remedies, escalated by
    `history`, the node's earlier failures), the errored checks counted after it."""
    if res.unreachable:
        return sanitize_reason("clusterforge: unreachable (ssh.reachable)")
    gone = missing_tools(c.message for c in res.errored)
    if gone:
        failed = f" (+{len(res.failed)} failed checks)" if res.failed else ""
        return sanitize_reason("clusterforge: " + "; ".join(gone) + failed)
    ids = [c.check_id for c in res.failed] + [f"{c.check_id}(error)" for c in res.errored]
    if not ids:
        return sanitize_reason(f"clusterforge: {res.note or 'not certified'}")
    return registry_drain.drain_reason(res.node, ids, now or utcnow(), history)


def failure_history(store: Any, node: str, run_id: str, now: datetime) -> list[tuple[datetime, list[str]]]:
    """(time, failed check ids) of the node's earlier finished certify runs within HISTORY_WINDOW."""
    out = []
    for r in store.node_history(node, kind="certify", since=now - HISTORY_WINDOW):
        if r.run_id != run_id and r.recorded_at and r.verdict != "pass":
            out.append((parse_iso(r.recorded_at), list(store.failed_checks(r.run_id, node))))
    return out


def drain_for_full_run(pool: Any, nodes: list[str], store: Any, run_id: str | None) -> list[str]:
    """Take nodes out of the pool before invasive checks; returns the nodes drained."""
    drained = []
    for n in nodes:
        if pool.drain(n, FULL_RUN_REASON):
            drained.append(n)
            store.record_pool_event(n, "drain", FULL_RUN_REASON, run_id=run_id)
    return drained


def admit_or_drain(plan_doc: dict[str, Any], res: NodeResult, pool: Any, store: Any, run_id: str) -> str:
    """Apply the admission policy to one node after its run; returns what happened, for the report."""
    if res.unreachable or not res.complete:
        reason = drain_reason(res)
        changed = pool.drain(res.node, reason)
        store.record_pool_event(res.node, "drain", reason, run_id=run_id)
        return f"drained: {reason}" if changed else "left drained by someone else"
    tiers = [str(t) for t in (plan_doc.get("certification") or {}).get("join_tiers") or ["quick"]]
    certs = [c for t in dict.fromkeys(tiers) for c in store.certificates(res.node, t)]
    decision = admission.decide(res.node, plan_doc, certs, admission.history_from_store(store, res.node))
    fresh = decision.action == "admit" and res.verdict != "pass"
    if fresh or (decision.action == "drain" and res.failed):
        # this run's checks failed (e.g. a full-tier run while only `quick` gates joining): the older
        # certificate that would admit it does not outweigh fresh evidence against the node; the reason
        # is the registry's decision on those checks (repeat offenders escalate)
        now = utcnow()
        reason = drain_reason(res, failure_history(store, res.node, run_id, now), now)
        decision = admission.Decision(res.node, "drain", reason)
    outcome = admission.apply(decision, pool, store=store)
    return outcome if decision.action == "admit" else f"{outcome}: {decision.reason}"
