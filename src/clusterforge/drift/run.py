"""`clusterforge drift`: site.yml in check+diff mode plus the quick validators, merged per node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.drift.ansible_diff import items_from_check_run
from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.records.outcomes import recorded_run
from clusterforge.run.ansible import lab_env, run_playbook
from clusterforge.run.provision import plan_order, resolve_hosts
from clusterforge.run.shard import forks_for, select


def ansible_drift(
    report: DriftReport,
    inventory: Path,
    hosts: list[str],
    forks: int | None,
    env: dict[str, str] | None = None,
    extra_vars: dict[str, Any] | None = None,
) -> None:
    res = run_playbook(
        "site.yml",
        inventory,
        limit=",".join(hosts),
        check=True,
        diff=True,
        forks=forks,
        env=env,
        extravars=extra_vars,
    )
    report.items += items_from_check_run(res)
    for h in hosts:
        hr = res.hosts.get(h)
        if hr is None or hr.unreachable:
            if h not in report.unreachable:
                report.unreachable.append(h)
        elif hr.failed:
            report.errors.append(f"{h}: check run failed at '{hr.failed_task}': {hr.message}")


def add_validator_items(report: DriftReport, results: dict[str, list[Any]]) -> None:
    """Merge quick-tier results: a failed check is a drift item; a check that could not run is a tool
    error, unless the check run already found the node unreachable (reported once, as reachability)."""
    for node, checks in results.items():
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


def _check_and_validate(
    report: DriftReport,
    plan_doc: dict[str, Any],
    inventory: Path,
    hosts: list[str],
    forks: int | None,
    validators: bool,
    extra_vars: dict[str, Any] | None = None,
) -> None:
    """The check run and the quick validators side by side: both only read the nodes, and the check run
    (one Ansible controller process, mostly one core) leaves CPU for the validators' SSH sessions."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from clusterforge.certify.runner import run_checks

    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="drift-validators") as pool:
        checks = (
            pool.submit(run_checks, plan_doc, inventory, "quick", hosts, False, None, cancel)
            if validators and hosts
            else None
        )
        try:
            # bios role: the lab BMCs' account; run in this (main) thread, which owns signal handling
            ansible_drift(report, inventory, hosts, forks, lab_env(plan_doc), extra_vars)
        except BaseException:
            cancel.set()  # interrupted: stop the validators before leaving
            raise
        if checks is not None:
            add_validator_items(report, checks.result())


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


def drift(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None = None,
    forks: int | None = None,
    validators: bool = True,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
) -> DriftReport:
    planned = [n["name"] for n in plan_doc["nodes"]]
    hosts = select(plan_order(resolve_hosts(inventory, limit), plan_doc), shard)
    forks = forks or forks_for(len(hosts))
    report = DriftReport(plan_doc["cluster"], plan_doc["plan_hash"], hosts)
    missing = [n for n in select(planned, shard) if n not in hosts] if not limit else []
    for n in missing:
        report.items.append(DriftItem(n, "inventory", "node in the inventory", "missing", "inventory"))
    _check_and_validate(report, plan_doc, inventory, hosts, forks, validators, extra_vars)
    reachable = [h for h in hosts if h not in report.unreachable]
    certificate_drift(report, plan_doc, reachable)
    for h in report.unreachable:
        report.items.append(
            DriftItem(
                h,
                "reachability",
                "reachable over SSH",
                "unreachable",
                "ansible",
                fix="check the node's power, network and sshd",
            )
        )
    report.items.sort(key=lambda i: (i.node, i.source, i.setting))
    return report


def drift_recorded(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None = None,
    allow_unreachable: bool = False,
    spec_path: str | Path | None = None,
    *,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
) -> DriftReport:
    """`drift` as a drift run of the records: started `running`, finished with each node's outcome (the
    status as the exit code reads it with `allow_unreachable`); an exception leaves it `incomplete`."""
    with recorded_run(
        "drift", plan_doc["cluster"], plan_hash=plan_doc.get("plan_hash"), spec_path=spec_path, shard=shard
    ) as rec:
        report = drift(plan_doc, inventory, limit, shard=shard, extra_vars=extra_vars)
        rec.finish(report.outcome(allow_unreachable))
    return report
