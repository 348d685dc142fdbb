"""Pool side of certification: drain before a full run, then admit or drain each node on its result.

The decision is the pool's admission policy (`clusterforge.pool.admission.decide`): admitted only with a
passing, verifiable certificate for the node's *current* expectation digest for every tier in
`certification.join_tiers` (flapping nodes are held). A node this run could not check (unreachable, or
its validators cut short) has no new certificate, so an older passing one must not admit it: it is
drained with the reason, whatever its history says. Nor is a node whose checks failed in this run admitted
on a passing certificate of another tier (a failed full run with only `quick` in `join_tiers`).
"""

from __future__ import annotations

from typing import Any

from clusterforge.certify.results import NodeResult
from clusterforge.certify.tools import missing_tools

FULL_RUN_REASON = "clusterforge: full certification in progress"


def drain_reason(res: NodeResult) -> str:
    """Why the node is out: unreachable; a missing tool (``cannot certify: <tool> missing (install: role
    R, tag T)``, not a hardware failure — checks that failed are counted after it); else the checks."""
    from clusterforge.pool.base import reason_for_checks, sanitize_reason

    if res.unreachable:
        return sanitize_reason("clusterforge: unreachable (ssh.reachable)")
    gone = missing_tools(c.message for c in res.errored)
    if gone:
        failed = f" (+{len(res.failed)} failed checks)" if res.failed else ""
        return sanitize_reason("clusterforge: " + "; ".join(gone) + failed)
    ids = [c.check_id for c in res.failed] + [f"{c.check_id}(error)" for c in res.errored]
    if not ids:
        return sanitize_reason(f"clusterforge: {res.note or 'not certified'}")
    return reason_for_checks(ids)


def pool_for(plan_doc: dict[str, Any]) -> Any:
    """The plan's pool manager (slurm: the lab's slurm.conf for a lab), or None when not installed."""
    from clusterforge.run.pipeline import pool_manager

    manager = pool_manager(plan_doc)
    if manager is None:
        from clusterforge.pool.managers import manager_for

        manager = manager_for(plan_doc)
    return manager


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
    from clusterforge.pool import admission

    if res.unreachable or not res.complete:
        reason = drain_reason(res)
        changed = pool.drain(res.node, reason)
        store.record_pool_event(res.node, "drain", reason, run_id=run_id)
        return f"drained: {reason}" if changed else "left drained by someone else"
    tiers = [str(t) for t in (plan_doc.get("certification") or {}).get("join_tiers") or ["quick"]]
    certs = [c for t in dict.fromkeys(tiers) for c in store.certificates(res.node, t)]
    decision = admission.decide(res.node, plan_doc, certs, admission.history_from_store(store, res.node))
    if decision.action == "admit" and res.verdict != "pass":
        # this run's checks failed (e.g. a full-tier run while only `quick` gates joining): the older
        # certificate that would admit it does not outweigh fresh evidence against the node
        decision = admission.Decision(res.node, "drain", drain_reason(res))
    outcome = admission.apply(decision, pool, store=store)
    return outcome if decision.action == "admit" else f"{outcome}: {decision.reason}"
