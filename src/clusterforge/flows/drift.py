"""`clusterforge drift`: plan → site.yml in check+diff mode plus the quick validators, merged per node →
render → (optional) fix: provision and re-certify the drifted nodes → exit code."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge import targets, term
from clusterforge.certify.runner import run_checks
from clusterforge.drift import formats
from clusterforge.drift.ansible_diff import items_from_check_run
from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.drift.run import add_validator_items, certificate_drift
from clusterforge.errors import ExitCode
from clusterforge.flows.certify import certify_flow
from clusterforge.flows.plan import load_plan
from clusterforge.flows.provision import print_report
from clusterforge.records.outcomes import recorded_run
from clusterforge.remote.inventory import plan_order, resolve_hosts
from clusterforge.run.ansible import run_playbook, strategy_env
from clusterforge.run.progress import Progress
from clusterforge.run.provision import Options, provision_recorded
from clusterforge.run.shard import forks_for, select
from clusterforge.term import safe, terminal_text


def render(report: DriftReport, fmt: str, allow_unreachable: bool) -> str:
    if fmt == "json":
        return formats.as_json(report)
    if fmt == "junit":
        return formats.junit(report)
    if fmt == "markdown":
        return formats.markdown(report, allow_unreachable)
    return formats.text(report, allow_unreachable)


def publish(
    report: DriftReport, fmt: str, allow_unreachable: bool, output: Path | None, console: Console
) -> None:
    """The report in `fmt` to `output` (the text on `console` for people), or to stdout without one."""
    if output is not None:
        output.write_text(render(report, fmt, allow_unreachable), encoding="utf-8")
        console.out(terminal_text(render(report, "text", allow_unreachable)), end="", highlight=False)
        console.print(f"report ({fmt}): {safe(output)}")
        return
    stdout = term.console()
    stdout.out(terminal_text(render(report, fmt, allow_unreachable)), end="", highlight=False)


def drift_flow(
    spec: Path,
    fmt: str,
    limit: str | None,
    allow_unreachable: bool,
    fix: bool,
    output: Path | None,
    console: Console,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
) -> int:
    strategy_env()  # a bad $CLUSTERFORGE_ANSIBLE_STRATEGY is refused before anything runs
    plan, inv = load_plan(spec)
    target = targets.for_plan(plan.doc)
    env = target.environment(plan.doc)
    record = (spec, allow_unreachable)
    report = drift_recorded(
        plan.doc, inv, limit, record, shard=shard, extra_vars=extra_vars, env=env, console=console
    )
    publish(report, fmt, allow_unreachable, output, console)
    if fix and report.drifted(allow_unreachable):
        nodes = sorted({i.node for i in report.items if i.node not in report.unreachable})
        if nodes:
            console.print(f"[bold]»[/] fixing {safe(', '.join(nodes))}")
            opts = Options(limit=",".join(nodes))
            rep = provision_recorded(plan.doc, inv, opts, target.pool_manager(plan.doc), console, spec, env)
            print_report(rep, console)
            certify_flow(spec, tier="quick", limit=",".join(nodes), admit=True, console=console)
            report = drift_recorded(plan.doc, inv, limit, record, shard=shard, env=env, console=console)
            publish(report, fmt, allow_unreachable, output, console)
    if report.errors and not report.drifted(allow_unreachable):
        return int(ExitCode.TOOL_FAILED)
    return int(ExitCode.NOT_AS_DECLARED if report.drifted(allow_unreachable) else ExitCode.OK)


def ansible_drift(
    report: DriftReport,
    inventory: Path,
    hosts: list[str],
    forks: int | None,
    env: dict[str, str] | None = None,
    extra_vars: dict[str, Any] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
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
        on_event=on_event,
    )
    report.items += items_from_check_run(res)
    for h in hosts:
        hr = res.hosts.get(h)
        if hr is None or hr.unreachable:
            if h not in report.unreachable:
                report.unreachable.append(h)
        elif hr.failed:
            report.errors.append(f"{h}: check run failed at '{hr.failed_task}': {hr.message}")


def _check_and_validate(
    report: DriftReport,
    plan_doc: dict[str, Any],
    inventory: Path,
    hosts: list[str],
    forks: int | None,
    validators: bool,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """The check run and the quick validators side by side: both only read the nodes, and the check run
    (one Ansible controller process, mostly one core) leaves CPU for the validators' SSH sessions."""
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="drift-validators") as pool:
        checks = (
            pool.submit(run_checks, plan_doc, inventory, "quick", hosts, False, None, cancel, env=env)
            if validators and hosts
            else None
        )
        try:
            # env: the target's (the lab BMCs' account for the bios role); run in this (main) thread, which
            # owns signal handling
            ansible_drift(report, inventory, hosts, forks, env, extra_vars, on_event)
        except BaseException:
            cancel.set()  # interrupted: stop the validators before leaving
            raise
        if checks is not None:
            add_validator_items(report, checks.result())


def drift(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None = None,
    forks: int | None = None,
    validators: bool = True,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    console: Console | None = None,
) -> DriftReport:
    """Check-mode site.yml and the quick validators side by side, merged per node; `env`: the target's;
    with `console`, the check run's progress on it (per host, or summary lines)."""
    planned = [n["name"] for n in plan_doc["nodes"]]
    hosts = select(plan_order(resolve_hosts(inventory, limit), plan_doc), shard)
    forks = forks or forks_for(len(hosts))
    report = DriftReport(plan_doc["cluster"], plan_doc["plan_hash"], hosts)
    missing = [n for n in select(planned, shard) if n not in hosts] if not limit else []
    for n in missing:
        report.items.append(DriftItem(n, "inventory", "node in the inventory", "missing", "inventory"))
    if console is None:
        _check_and_validate(report, plan_doc, inventory, hosts, forks, validators, extra_vars, env)
    else:
        with Progress(console, hosts, label="drift check run") as progress:
            progress.phase(f"drift: site.yml --check --diff and the quick validators on {len(hosts)} nodes")
            _check_and_validate(
                report, plan_doc, inventory, hosts, forks, validators, extra_vars, env, progress.event
            )
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
    limit: str | None,
    record: tuple[str | Path | None, bool],
    *,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    console: Console | None = None,
) -> DriftReport:
    """`drift` as a drift run of the records (`record`: the spec path, and whether unreachable nodes are
    allowed): started `running`, finished with each node's outcome (the status as the exit code reads it);
    an exception leaves it `incomplete`."""
    spec_path, allow_unreachable = record
    with recorded_run(
        "drift", plan_doc["cluster"], plan_hash=plan_doc.get("plan_hash"), spec_path=spec_path, shard=shard
    ) as rec:
        report = drift(
            plan_doc, inventory, limit, shard=shard, extra_vars=extra_vars, env=env, console=console
        )
        rec.finish(report.outcome(allow_unreachable))
    return report
