"""Drift items from what the drift flow gathered (`clusterforge.flows.drift`): failed quick validators and
certificates issued for another expectation digest."""

from __future__ import annotations

from typing import Any

from clusterforge.drift.model import DriftItem, DriftReport


def add_validator_items(report: DriftReport, results: dict[str, list[Any]]) -> None:
    """Merge quick-tier results: a failed check is a drift item; a check that could not run is a tool
    error, unless the check run already found the node unreachable (reported once, as reachability)."""
    for node, checks in results.items():
        report.checked[node] = report.checked.get(node, 0) + len(checks)
        for c in checks:
            if c.status == "fail":
                report.items.append(
                    DriftItem(
                        node,
                        c.check_id,
                        str(c.expected),
                        str(c.found),
                        f"validator {c.check_id}",
                        fix=c.fix or "",
                    )
                )
            elif c.status == "error" and node not in report.unreachable:
                report.errors.append(f"{node}: {c.check_id} could not run: {c.message}")


def certificate_drift(report: DriftReport, plan_doc: dict[str, Any], hosts: list[str]) -> None:
    """A certificate issued for another expectation digest means what the node is checked against changed."""
    from clusterforge.records.store import latest_certificates

    current = {n["name"]: n["expectation_digest"] for n in plan_doc["nodes"]}
    for node, cert in latest_certificates(plan_doc["cluster"], hosts).items():
        if cert and cert.get("expectation_digest") != current.get(node):
            report.items.append(
                DriftItem(
                    node,
                    "certificate",
                    current.get(node, "")[:16],
                    str(cert.get("expectation_digest", ""))[:16],
                    "records",
                    severity="warning",
                    fix=f"clusterforge certify --limit {node}",
                )
            )
