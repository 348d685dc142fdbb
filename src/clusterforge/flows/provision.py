"""`clusterforge provision`: spec → plan → the target prepares the nodes → rolling site.yml through the
plan's pool manager (`clusterforge.run.provision`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge import targets
from clusterforge.errors import ExitCode, InputError, Problem
from clusterforge.flows.plan import load_plan
from clusterforge.plan import build_plan
from clusterforge.run.ansible import strategy_env
from clusterforge.run.provision import provision_recorded
from clusterforge.spec import load_spec
from clusterforge.term import safe


def print_report(report: Any, console: Console) -> None:
    t = Table(
        "host",
        "status",
        "changed",
        "pending reboot",
        "rebooted",
        "duration s",
        "failing task / message",
        title=f"provision {safe(report.run_id)} ({'check' if report.check else 'apply'})",
    )
    for h in sorted(report.hosts.values(), key=lambda x: x.host):
        style = {"failed": "red", "unreachable": "red", "changed": "yellow"}.get(h.status, "")
        t.add_row(
            safe(h.host),
            f"[{style}]{safe(h.status)}[/]" if style else safe(h.status),
            str(h.changed),
            safe(", ".join(h.pending_reboot) or "-"),
            "yes" if h.rebooted else "-",
            f"{h.duration:.1f}",
            safe(f"{h.failed_task}: {h.message}") if h.failed_task else "",
        )
    console.print(t)
    if report.aborted:
        console.print(f"[red]aborted[/]: {safe(report.aborted)}")
    if report.tool_error:
        console.print(f"[red]the tool failed[/]: {safe(report.tool_error)}")
    elif not report.ok and report.logs:
        console.print(f"Ansible output and events: {safe(report.logs)}")


def provision_flow(spec: Path, opts: Any, console: Console, inventory: Path | None = None) -> int:
    """Provision SPEC; with `inventory` (e.g. written by `clusterforge inventory from-stack`) use it as is."""
    strategy_env()  # a bad $CLUSTERFORGE_ANSIBLE_STRATEGY is refused before the lab or any node is touched
    if inventory is not None:
        plan, inv = build_plan(load_spec(spec)), inventory
        if not (inv / "hosts.yml").is_file():
            raise InputError(
                [
                    Problem(
                        str(inv),
                        "",
                        "a folder with hosts.yml and group_vars/",
                        "no hosts.yml",
                        "run `clusterforge inventory from-stack` or `clusterforge plan` first",
                    )
                ],
                "no inventory",
            )
    else:
        plan, inv = load_plan(spec)
    target = targets.for_plan(plan.doc)
    target.prepare(plan.doc, console)
    pool = None if opts.check else target.pool_manager(plan.doc)
    report = provision_recorded(plan.doc, inv, opts, pool, console, spec, target.environment(plan.doc))
    print_report(report, console)
    console.print(f"run record: clusterforge records show {safe(report.run_id)}")
    if report.tool_error:
        return int(ExitCode.TOOL_FAILED)
    return int(ExitCode.OK if report.ok else ExitCode.NOT_AS_DECLARED)
