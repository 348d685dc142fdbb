"""Pool side of certification: drain before a full run, then admit or drain each node on its result.

A node is admitted only with a passing, verifiable certificate for its *current* expectation digest for
every tier the policy requires (`certification.join_tiers`); earlier certificates of other tiers count
while they are valid. Anything else drains it with a `clusterforge:` reason naming the failed checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.certify.expect import NodeExpect
from clusterforge.certify.results import NodeResult

FULL_RUN_REASON = "clusterforge: full certification in progress"
COVERS = {"quick": {"quick"}, "full": {"quick", "full"}, "burnin": {"burnin"}}
TIERS_COVERING = {t: [k for k, v in COVERS.items() if t in v] for t in COVERS}


@dataclass(frozen=True)
class Decision:
    node: str
    admit: bool
    reason: str  # drain reason when not admitted; what admitted it otherwise


def drain_reason(res: NodeResult) -> str:
    from clusterforge.pool.base import reason_for_checks, sanitize_reason

    if res.unreachable:
        return sanitize_reason("clusterforge: unreachable (ssh.reachable)")
    ids = [c.check_id for c in res.failed] + [f"{c.check_id}(error)" for c in res.errored]
    if not ids:
        return sanitize_reason(f"clusterforge: {res.note or 'not certified'}")
    return reason_for_checks(ids)


def _valid(cert: Mapping[str, Any] | None, node: NodeExpect, tier: str) -> str:
    """'' when ``cert`` admits ``node`` for ``tier``, else why not."""
    from clusterforge.records import verify

    if not cert:
        return f"no {tier} certificate"
    if cert.get("tier") != tier or cert.get("node") != node.name:
        return f"certificate is for {cert.get('node')}/{cert.get('tier')}"
    if cert.get("verdict") != "pass":
        return f"{tier} certificate verdict {cert.get('verdict')}"
    if cert.get("expectation_digest") != node.digest:
        return f"{tier} certificate is for another expectation digest"
    checked = verify(cert)
    return "" if checked.ok else f"{tier} certificate invalid: {'; '.join(checked.reasons)}"


def decide(
    node: NodeExpect, res: NodeResult, issued: Mapping[str, Any] | None, tier: str, store: Any
) -> Decision:
    """Admission from this run's result and the certificates on record for the other required tiers
    (a full run covers quick: it runs the quick checks too)."""
    if res.verdict != "pass":
        return Decision(node.name, False, drain_reason(res))
    why = _valid(issued, node, tier)
    if why:
        return Decision(node.name, False, f"clusterforge: not admitted: {why}")
    required = list(node.certification.get("join_tiers") or ["quick"])
    for t in required:
        if t in COVERS[tier]:
            continue
        earlier = [
            c for held in TIERS_COVERING[t] for c in (store.certificates(node.name, held) if store else [])
        ]
        if not any(not _valid(c, node, str(c.get("tier"))) for c in earlier):
            return Decision(
                node.name, False, f"clusterforge: not admitted: no valid {t} certificate on record"
            )
    return Decision(node.name, True, f"certified ({', '.join(required)}) for digest {node.digest[:12]}")


def pool_for(plan_doc: dict[str, Any]) -> Any:
    from clusterforge.run.pipeline import pool_manager

    return pool_manager(plan_doc)


def drain_for_full_run(pool: Any, nodes: list[str], store: Any, run_id: str | None) -> list[str]:
    """Take nodes out of the pool before invasive checks; returns the nodes drained."""
    drained = []
    for n in nodes:
        if pool.drain(n, FULL_RUN_REASON):
            drained.append(n)
            if store is not None:
                store.record_pool_event(n, "drain", FULL_RUN_REASON, run_id=run_id)
    return drained


def apply(
    pool: Any, decision: Decision, cert: Mapping[str, Any] | None, store: Any, run_id: str | None
) -> str:
    """Admit (resume with the certificate) or drain; returns what was done, for the report."""
    if decision.admit and cert is not None:
        pool.admit(decision.node, cert)
        action, text = "admit", "admitted"
    else:
        pool.drain(decision.node, decision.reason)
        action, text = "drain", f"drained: {decision.reason}"
    if store is not None:
        store.record_pool_event(decision.node, action, decision.reason, run_id=run_id)
    return text
