"""`clusterforge records runs` and `records show RUN`: the recorded runs (provision, certify, drift, burn-in),
and one run with what it did or found per node (mounted on the `records` group by `cli/records.py`).

Exit codes: 0 listed; 2 bad input (an unknown kind or format, no such run, an ambiguous id prefix).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from clusterforge.cli.options import OutputOpt, emit, format_option
from clusterforge.errors import ExitCode, printable
from clusterforge.records.model import Run
from clusterforge.records.schema import KINDS

DbOpt = Annotated[
    Path | None,
    typer.Option(
        help="records database (default: $CLUSTERFORGE_DB or ~/.local/state/clusterforge/records.db)"
    ),
]
FormatOpt = Annotated[str, format_option("text", "json")]


def _line(run: Run, nodes: int | None, changed: int | None) -> str:
    counts = "" if nodes is None else f"{nodes} nodes, {changed} changed  "
    return printable(
        f"{run.started_at[:19]}  {run.kind:<9} {run.status:<10} {run.cluster}  {run.id}  {counts}"
        f"{run.message or ''}"
    )


def _run_dict(run: Run) -> dict[str, Any]:
    return dataclasses.asdict(run)


def runs(
    kind: Annotated[str | None, typer.Option(help="provision | certify | drift | burnin")] = None,
    cluster: Annotated[str | None, typer.Option(help="only the runs of this cluster")] = None,
    limit: Annotated[int, typer.Option(help="at most this many, newest first")] = 20,
    db: DbOpt = None,
    fmt: FormatOpt = "text",
    output: OutputOpt = None,
) -> None:
    """List the recorded runs, newest first: when, kind, status, cluster, id, node and change counts
    (provision and drift), summary."""
    from clusterforge.records.store import Store

    if kind is not None and kind not in KINDS:
        raise typer.BadParameter(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    with Store(db) as store:
        store.mark_stale_incomplete()  # a run whose process is gone reads as incomplete, never running
        found = store.runs(cluster=cluster, kind=kind, limit=limit)
        counts = {r.id: store.node_outcomes(r.id) for r in found if r.kind in ("provision", "drift")}
    if fmt == "json":
        out = []
        for r in found:
            row = _run_dict(r)
            if r.id in counts:
                row["nodes"] = len(counts[r.id])
                row["changed"] = sum(n.changed for n in counts[r.id])
            out.append(row)
        emit(json.dumps(out, sort_keys=True), output)
        return
    text = [
        _line(r, len(o), sum(n.changed for n in o))
        if (o := counts.get(r.id)) is not None
        else _line(r, None, None)
        for r in found
    ]
    emit("\n".join(text) if found else "no runs recorded", output)


def show(
    run: Annotated[str, typer.Argument(help="run id (a unique prefix will do)")],
    db: DbOpt = None,
    fmt: FormatOpt = "text",
    output: OutputOpt = None,
) -> None:
    """One run: who ran it, when, its status and logs folder, and per node what it did or found (provision
    and drift) or its verdict (certify, burn-in)."""
    from clusterforge.records.model import RecordsError
    from clusterforge.records.store import Store

    with Store(db) as store:
        try:
            rid = store.find_run(run)
        except RecordsError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        r = store.get_run(rid)
        outcomes = store.node_outcomes(rid)
        verdicts = store.node_results(rid)
    if fmt == "json":
        doc = _run_dict(r)
        doc["nodes"] = [dataclasses.asdict(n) for n in outcomes]
        doc["node_results"] = [dataclasses.asdict(v) for v in verdicts]
        emit(json.dumps(doc, sort_keys=True), output)
        return
    lines = [
        f"{r.kind} run {r.id} of {r.cluster}: {r.status}",
        f"  by {r.who}@{r.host}, {r.started_at} → {r.ended_at or '-'}",
        f"  plan {(r.plan_hash or '-')[:12]}, spec {r.spec_path or '-'}"
        + (f", shard {r.shard}" if r.shard else ""),
    ]
    if r.log_dir:
        lines.append(f"  logs {r.log_dir}")
    if r.message:
        lines.append(f"  {r.message}")
    for n in outcomes:
        why = f"  {n.failed_task}: {n.message}" if n.failed_task else f"  {n.message}" if n.message else ""
        lines.append(f"  {n.node:<24} {n.outcome:<12} changed {n.changed}{why}")
    for v in verdicts:
        lines.append(f"  {v.node:<24} {v.verdict}")
    emit("\n".join(printable(line) for line in lines), output)
