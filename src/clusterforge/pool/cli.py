"""`clusterforge pool ...`: status, admit and drain through the plan's pool manager (mounted by the root CLI).

Exit codes: 0 ok; 1 the manager failed; 2 bad input; 3 a node was not admitted (drained or held).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.pool.base import sanitize_reason
from clusterforge.targets import pool_manager as manager_for

app = typer.Typer(
    help="Node pool: status, admit (admission policy), drain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PlanOpt = Annotated[Path | None, typer.Option(help="plan.json (inventory/generated/<cluster>/plan.json)")]
SpecOpt = Annotated[
    Path | None,
    typer.Option(
        help="cluster spec, when --plan is not given (default $CLUSTERFORGE_SPEC)", envvar="CLUSTERFORGE_SPEC"
    ),
]
ManagerOpt = Annotated[str | None, typer.Option(help="file | slurm | kubernetes (default: the plan's)")]
RegistryOpt = Annotated[
    Path | None,
    typer.Option(help="file manager registry (default: ~/.local/state/clusterforge/pool/<cluster>.json)"),
]
DbOpt = Annotated[
    Path | None,
    typer.Option(
        help="records database (default: $CLUSTERFORGE_DB or ~/.local/state/clusterforge/records.db)"
    ),
]


def plan_doc_from(plan: Path | None, spec: Path | None) -> dict[str, Any]:
    """The plan of `--plan PLAN.json`, else compiled from `--spec` (nothing written)."""
    if plan is not None:
        try:
            doc = json.loads(plan.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise typer.BadParameter(f"{plan}: cannot read the plan: {exc}") from exc
        if not isinstance(doc, dict) or "nodes" not in doc:
            raise typer.BadParameter(f"{plan}: not a plan.json (no nodes)")
        return doc
    if spec is None:
        raise typer.BadParameter("name the cluster: --plan PLAN.json or --spec SPEC (or CLUSTERFORGE_SPEC)")
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    return dict(build_plan(load_spec(spec)).doc)


def _fail(exc: ClusterforgeError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(exc.exit_code)


@app.callback()
def _pool() -> None:
    """Node pool: status, admit (admission policy), drain."""


@app.command()
def status(
    nodes: Annotated[list[str] | None, typer.Argument(help="nodes (default: every node of the plan)")] = None,
    plan: PlanOpt = None,
    spec: SpecOpt = None,
    manager: ManagerOpt = None,
    registry: RegistryOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """State of each node in the pool manager: idle, busy, draining, drained, down, unknown; and why."""
    doc = plan_doc_from(plan, spec)
    names = list(nodes or [n["name"] for n in doc["nodes"]])
    try:
        states = manager_for(doc, manager, registry).status(names)
    except ClusterforgeError as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps([states[n].as_dict() for n in names], indent=2, sort_keys=True))
        return
    width = max((len(n) for n in names), default=4)
    for n in names:
        s = states[n]
        typer.echo(f"{n:<{width}}  {s.state:<9} {s.reason}".rstrip())


@app.command()
def admit(
    nodes: Annotated[list[str], typer.Argument(help="nodes to admit")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="override a hold for review (flapping) or a drain "
            "clusterforge does not own; a valid passing "
            "certificate is still required",
        ),
    ] = False,
    plan: PlanOpt = None,
    spec: SpecOpt = None,
    manager: ManagerOpt = None,
    registry: RegistryOpt = None,
    db: DbOpt = None,
) -> None:
    """Apply the admission policy to NODES: admit with valid passing certificates, else drain (or hold)."""
    from clusterforge.pool.admission import apply, decide, history_from_store
    from clusterforge.records import Store, signing

    doc = plan_doc_from(plan, spec)
    known = {n["name"] for n in doc["nodes"]}
    unknown = [n for n in nodes if n not in known]
    if unknown:
        raise typer.BadParameter(f"not in the plan of {doc.get('cluster')}: {', '.join(unknown)}")
    not_admitted = 0
    try:
        pm = manager_for(doc, manager, registry)
        trusted = signing.trusted_keys()
        with Store(db) as store:
            for node in nodes:
                if force:
                    store.record_pool_event(node, "override", "pool admit --force")
                decision = decide(
                    node, doc, store.certificates(node), history_from_store(store, node), trusted=trusted
                )
                outcome = apply(decision, pm, store=store, force=force)
                not_admitted += outcome != "admitted"
                typer.echo(f"{node}: {outcome}" + ("" if outcome == "admitted" else f" ({decision.reason})"))
    except ClusterforgeError as exc:
        raise _fail(exc) from None
    raise typer.Exit(ExitCode.NOT_AS_DECLARED if not_admitted else ExitCode.OK)


@app.command()
def drain(
    nodes: Annotated[list[str], typer.Argument(help="nodes to drain")],
    reason: Annotated[str, typer.Option(help="why (prefixed `clusterforge:`; one line, no quotes)")],
    force: Annotated[bool, typer.Option("--force", help="replace a drain someone else made")] = False,
    plan: PlanOpt = None,
    spec: SpecOpt = None,
    manager: ManagerOpt = None,
    registry: RegistryOpt = None,
    db: DbOpt = None,
) -> None:
    """Drain NODES with REASON (a node drained by someone else is left as it is unless --force)."""
    from clusterforge.records import Store

    doc = plan_doc_from(plan, spec)
    text = sanitize_reason(reason)
    try:
        pm = manager_for(doc, manager, registry)
        with Store(db) as store:
            for node in nodes:
                changed = pm.drain(node, text, force=force)
                if changed:
                    store.record_pool_event(node, "drain", text)
                typer.echo(f"{node}: {'drained' if changed else 'left alone (drained by someone else)'}")
    except ClusterforgeError as exc:
        raise _fail(exc) from None
