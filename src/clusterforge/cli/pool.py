"""`clusterforge pool status|admit|drain [SPEC] NODE...`: the plan's pool manager (mounted by the root CLI).

Exit codes: 0 ok; 1 the manager failed; 2 bad input; 3 a node was not admitted (drained or held).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from clusterforge.cli.options import OutputOpt, deprecated_option, emit, format_option, json_flag, split_spec
from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.pool.base import sanitize_reason
from clusterforge.targets import pool_manager as manager_for

app = typer.Typer(
    help="Node pool: status, admit (admission policy), drain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecNodes = Annotated[
    list[str] | None,
    typer.Argument(
        help="[SPEC] NODE...: SPEC (a spec YAML or plan.json, told apart by its .yaml/.yml/.json suffix; "
        "default $CLUSTERFORGE_SPEC), then node names",
        show_default=False,
    ),
]
PlanOpt = Annotated[Path | None, deprecated_option("--plan", "the positional SPEC (plan.json or spec YAML)")]
SpecOpt = Annotated[Path | None, deprecated_option("--spec", "the positional SPEC")]
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
    """The plan of a plan.json (`plan`, or a `spec` ending in .json) or of a spec YAML (planned here)."""
    if plan is None and spec is not None and spec.suffix.lower() == ".json":
        plan, spec = spec, None
    if plan is not None:
        try:
            doc = json.loads(plan.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise typer.BadParameter(f"{plan}: cannot read the plan: {exc}") from exc
        if not isinstance(doc, dict) or "nodes" not in doc:
            raise typer.BadParameter(f"{plan}: not a plan.json (no nodes)")
        return doc
    if spec is None:
        raise typer.BadParameter("name the cluster: SPEC (a spec YAML or plan.json) or CLUSTERFORGE_SPEC")
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    return dict(build_plan(load_spec(spec)).doc)


def _fail(exc: ClusterforgeError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(exc.exit_code)


@app.callback()
def _pool() -> None:
    """Node pool: status, admit (admission policy), drain."""


def _cluster(
    args: list[str] | None, plan: Path | None, spec: Path | None
) -> tuple[dict[str, Any], list[str]]:
    """(plan document, node names) from `[SPEC] NODE...` or the deprecated --plan/--spec."""
    if plan is not None or spec is not None:
        return plan_doc_from(plan, spec), list(args or [])
    env = os.environ.get("CLUSTERFORGE_SPEC")
    given, nodes = split_spec(args or [], Path(env) if env else None)
    return plan_doc_from(None, given), nodes


@app.command()
def status(
    args: SpecNodes = None,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    manager: ManagerOpt = None,
    registry: RegistryOpt = None,
    plan: PlanOpt = None,
    spec: SpecOpt = None,
    as_json: Annotated[bool, json_flag()] = False,
) -> None:
    """State of each node in the pool manager: idle, busy, draining, drained, down, unknown; and why.

    Every node of the plan unless NODEs are named."""
    doc, nodes = _cluster(args, plan, spec)
    names = nodes or [n["name"] for n in doc["nodes"]]
    try:
        states = manager_for(doc, manager, registry).status(names)
    except ClusterforgeError as exc:
        raise _fail(exc) from None
    if as_json or fmt == "json":
        emit(json.dumps([states[n].as_dict() for n in names], indent=2, sort_keys=True), output)
        return
    width = max((len(n) for n in names), default=4)
    emit(
        "".join(f"{n:<{width}}  {states[n].state:<9} {states[n].reason}".rstrip() + "\n" for n in names),
        output,
    )


@app.command()
def admit(
    args: SpecNodes = None,
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
    """Apply the admission policy to NODEs: admit with valid passing certificates, else drain (or hold)."""
    import dataclasses

    from clusterforge.checks import drain as registry_drain
    from clusterforge.pool.admission import apply, decide, history_from_store
    from clusterforge.records import Store, signing
    from clusterforge.records._util import utcnow

    doc, nodes = _cluster(args, plan, spec)
    if not nodes:
        raise typer.BadParameter("name the nodes to admit: pool admit [SPEC] NODE...")
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
                if decision.action == "drain" and decision.failed:  # the registry names check and action
                    why = registry_drain.drain_reason(node, decision.failed, utcnow())
                    decision = dataclasses.replace(decision, reason=why)
                outcome = apply(decision, pm, store=store, force=force)
                not_admitted += outcome != "admitted"
                typer.echo(f"{node}: {outcome}" + ("" if outcome == "admitted" else f" ({decision.reason})"))
    except ClusterforgeError as exc:
        raise _fail(exc) from None
    raise typer.Exit(ExitCode.NOT_AS_DECLARED if not_admitted else ExitCode.OK)


@app.command()
def drain(
    reason: Annotated[str, typer.Option(help="why (prefixed `clusterforge:`; one line, no quotes)")],
    args: SpecNodes = None,
    force: Annotated[bool, typer.Option("--force", help="replace a drain someone else made")] = False,
    plan: PlanOpt = None,
    spec: SpecOpt = None,
    manager: ManagerOpt = None,
    registry: RegistryOpt = None,
    db: DbOpt = None,
) -> None:
    """Drain NODEs with REASON (a node drained by someone else is left as it is unless --force)."""
    from clusterforge.records import Store

    doc, nodes = _cluster(args, plan, spec)
    if not nodes:
        raise typer.BadParameter("name the nodes to drain: pool drain [SPEC] NODE... --reason TEXT")
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
