"""Burn-in's side of the records: node results, part serials, `burnin` certificates.

Certificates go through `clusterforge.records.certificate` (tier `burnin`), issued after the records run
is finished (a certificate of a running run never counts). The pool side (drains with the suspected
component, resumes) is the flow's: `clusterforge.flows.burnin`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from clusterforge.burnin.model import COUNTER_PREFIX, PERF_TESTS, UNMEASURED_KINDS, Measurement
from clusterforge.burnin.verdicts import Evaluation

BURNIN_PREFIX = "clusterforge: burnin"


def in_progress_reason(burnin_id: str) -> str:
    return f"{BURNIN_PREFIX} {burnin_id[:8]} in progress"


def serials(rows: Iterable[tuple[int, Measurement]]) -> dict[str, dict[str, str]]:
    """{node: {"gpu3": serial, "rail2": guid}} from the last iteration that reported them."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for _it, m in rows:
        if m.test == "ecc.corrected" and m.detail.get("serial"):
            out[m.node][m.component] = str(m.detail["serial"])
        elif m.test.startswith(COUNTER_PREFIX) and m.detail.get("guid"):
            out[m.node][m.component] = str(m.detail["guid"])
    return dict(out)


def cert_checks(ev: Evaluation, node: str) -> list[dict[str, Any]]:
    """One check per burn-in test for the certificate and the records (fail when a finding names it; error
    when its tool was missing, crashed or timed out, so it measured nothing)."""
    v = ev.nodes[node]
    failing: dict[str, list[str]] = defaultdict(list)
    erring: dict[str, list[str]] = defaultdict(list)
    for f in v.findings:
        if f.kind in UNMEASURED_KINDS:  # every test the tool would have measured
            for test in f.evidence.get("tests") or [f.test]:
                erring[_check_id(test)].append(f.summary)
        else:
            failing[_check_id(f.test)].append(f.summary)
    found: dict[str, dict[str, Any]] = defaultdict(dict)
    for key, s in ev.units.items():
        test, n, comp, peer = key
        if n == node and test in PERF_TESTS:
            label = "/".join(x for x in (comp, peer) if x) or "node"
            found[_check_id(test)][label] = None if s.level is None else round(s.level, 2)
    cfg = ev.config
    checks = []
    every = set(found) | set(failing) | set(erring) | {"burnin.ecc", "burnin.link_errors", "burnin.dcgm.diag"}
    for cid in sorted(every):
        checks.append(
            {
                "id": cid,
                "status": "fail" if failing.get(cid) else "error" if erring.get(cid) else "pass",
                "expected": (
                    f"within its fleet (robust z >= -{cfg.z_max:g}, CV <= {100 * cfg.cv_max:g} %), above its "
                    "floor (the SKU's; a storage target's for fio), every iteration measured"
                    if cid not in ("burnin.ecc", "burnin.link_errors")
                    else "no counter growth during the run"
                ),
                "found": failing.get(cid) or erring.get(cid) or found.get(cid) or "ok",
                "evidence": {"iterations": v.iterations},
            }
        )
    return checks


def _check_id(test: str) -> str:
    if test.startswith("ecc."):
        return "burnin.ecc"
    if test.startswith(COUNTER_PREFIX):
        return "burnin.link_errors"
    return f"burnin.{test}"


def record_results(
    store: Any,
    run_id: str,
    ev: Evaluation,
    digests: Mapping[str, str],
    parts: Mapping[str, Mapping[str, str]],
) -> None:
    from clusterforge.records import CheckResult, Part

    for node, v in ev.nodes.items():
        rows = [
            CheckResult(
                node=node,
                check_id=c["id"],
                status=c["status"],
                expected=c["expected"],
                found=c["found"],
                evidence=c["evidence"],
            )
            for c in cert_checks(ev, node)
        ]
        store.add_check_results(run_id, rows)
        found = [
            Part("gpu", int(k[3:]), s) for k, s in (parts.get(node) or {}).items() if k.startswith("gpu")
        ]
        found += [
            Part("nic", int(k[4:]), s) for k, s in (parts.get(node) or {}).items() if k.startswith("rail")
        ]
        if found:
            store.record_parts(run_id, node, found)
        store.add_node_result(run_id, node, v.verdict, expectation_digest=digests.get(node))


def issue_certificates(
    store: Any,
    plan_doc: Mapping[str, Any],
    run_id: str,
    ev: Evaluation,
    parts: Mapping[str, Mapping[str, str]],
) -> dict[str, dict[str, Any]]:
    """A `burnin` certificate per node with a verdict (pass or fail); none for a node without one."""
    from clusterforge.records import certificate as certmod

    by_name = {n["name"]: n for n in plan_doc["nodes"]}
    validity = float((plan_doc.get("certification") or {}).get("validity_hours", 720))
    out = {}
    for node, v in ev.nodes.items():
        if v.verdict == "error":
            continue
        p = parts.get(node) or {}
        cert = certmod.build(
            cluster=str(plan_doc["cluster"]),
            node=node,
            expectation_digest=by_name[node]["expectation_digest"],
            plan_hash=plan_doc.get("plan_hash"),
            tier="burnin",
            checks=cert_checks(ev, node),
            tool_versions={},
            gpu_serials=[
                {"index": int(k[3:]), "serial": s} for k, s in sorted(p.items()) if k.startswith("gpu")
            ],
            nic_serials=[
                {"index": int(k[4:]), "serial": s} for k, s in sorted(p.items()) if k.startswith("rail")
            ],
            validity_hours=validity,
            run_id=run_id,
        )
        store.issue_certificate(cert)
        out[node] = cert
    return out
