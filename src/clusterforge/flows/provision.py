"""`clusterforge provision`: spec → plan → the target prepares the nodes → a read leaves the converged
nodes alone (`clusterforge.flows.converged`) → rolling site.yml on the others through the plan's pool
manager (`clusterforge.run.provision`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge import targets
from clusterforge.errors import ExitCode, InputError, Problem
from clusterforge.flows.converged import converged
from clusterforge.flows.node_side import bad_via, engine
from clusterforge.flows.plan import load_plan
from clusterforge.flows.provision_report import print_report
from clusterforge.plan import build_plan
from clusterforge.run.ansible import strategy_env
from clusterforge.run.provision import provision_recorded
from clusterforge.spec import load_spec
from clusterforge.term import safe


def provision_flow(
    spec: Path,
    opts: Any,
    console: Console,
    inventory: Path | None = None,
    full: bool = False,
    via: str = "auto",
) -> int:
    """Provision SPEC; with `inventory` (e.g. written by `clusterforge inventory from-stack`) use it as is.
    Nodes a read finds converged are left alone unless `full` (or --check, --tags, --extra-vars: then
    site.yml runs on every selected node); `via`: how that read runs (as `clusterforge drift --via`)."""
    strategy_env()  # a bad $CLUSTERFORGE_ANSIBLE_STRATEGY is refused before the lab or any node is touched
    if wrong := bad_via(via):  # before the plan is loaded (and the generated inventory written)
        console.print(f"[red]error[/]: {safe(wrong)}")
        return int(ExitCode.BAD_INPUT)
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
    scheduler, wrong = engine(target, plan.doc, via, spec, "read")
    if wrong:
        console.print(f"[red]error[/]: {safe(wrong)}")
        return int(ExitCode.BAD_INPUT)
    target.prepare(plan.doc, console)
    env = target.environment(plan.doc)
    if not (full or opts.check or opts.tags or opts.extra_vars):
        opts.converged = _read_converged(plan.doc, inv, opts.limit, env, console, scheduler)
    pool = None if opts.check else target.pool_manager(plan.doc)
    report = provision_recorded(plan.doc, inv, opts, pool, console, spec, env)
    print_report(report, console)
    console.print(f"run record: clusterforge records show {safe(report.run_id)}")
    if report.tool_error:
        return int(ExitCode.TOOL_FAILED)
    return int(ExitCode.OK if report.ok else ExitCode.NOT_AS_DECLARED)


def _read_converged(
    doc: dict[str, Any],
    inventory: Path,
    limit: str | None,
    env: dict[str, str],
    console: Console,
    scheduler: Any | None,
) -> dict[str, str]:
    """The nodes to leave alone (said on `console`, with why each other node runs site.yml)."""
    found = converged(doc, inventory, limit, env, console, scheduler)
    if found.nodes:
        console.print(
            f"[bold]»[/] converged, site.yml not run ({len(found.nodes)}): "
            f"{safe(', '.join(sorted(found.nodes)))} — `--full` runs it there too",
            highlight=False,
        )
    shown = sorted(found.run.items())
    for node, why in shown[:20]:
        console.print(f"[bold]»[/] site.yml on {safe(node)}: {safe(why)}", highlight=False)
    if len(shown) > 20:
        console.print(f"[bold]»[/] site.yml on {len(shown) - 20} more node(s)", highlight=False)
    return found.nodes
