"""`clusterforge burnin SPEC`: burn-in runs on drained nodes (mounted by the root CLI).

Exit codes: 0 every node passed; 1 the tool failed (nodes locked by another live run, pool or SSH setup
failed); 2 bad input; 3 some node or fabric component failed burn-in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from clusterforge.cli.options import OutputOpt, emit, format_option, human_console
from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.progress import NodeProgress, Summaries, aggregate
from clusterforge.term import literal, safe

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])", re.I)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

burnin_app = typer.Typer(
    help="Burn-in: repeated performance tests on drained nodes, with fleet statistics.",
    pretty_exceptions_enable=False,
    add_completion=False,
    # a group parses options only before its arguments unless told otherwise: `burnin SPEC --iterations 3`
    context_settings={"allow_interspersed_args": True},
)


def parse_duration(text: str) -> float:
    """`8h`, `90m`, `1h30m`, `45s`, `2d` or plain seconds → seconds."""
    t = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = _DURATION.findall(t)
    if not parts or _DURATION.sub("", t).strip():
        raise typer.BadParameter(f"duration {text!r}: use e.g. 8h, 90m, 1h30m, 45s")
    return sum(float(n) * _UNITS[u.lower()] for n, u in parts)


@burnin_app.callback(invoke_without_command=True)
def burnin(
    spec: Annotated[
        Path | None,
        typer.Argument(
            help="cluster spec (YAML); default: $CLUSTERFORGE_SPEC, or the resumed run's",
            envvar="CLUSTERFORGE_SPEC",
        ),
    ] = None,
    duration: Annotated[str | None, typer.Option(help="run iterations for this long (8h, 90m)")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="run this many iterations")] = None,
    limit: Annotated[str | None, typer.Option(help="Ansible host pattern (default: every node)")] = None,
    resume: Annotated[
        str | None, typer.Option(help="continue burn-in RUN after its last committed iteration")
    ] = None,
    db: Annotated[Path | None, typer.Option(help="records database (default $CLUSTERFORGE_DB)")] = None,
    admit: Annotated[
        bool,
        typer.Option(help="apply the admission policy to passing nodes (else: resume burn-in's own drain)"),
    ] = False,
    group_size: Annotated[int, typer.Option(min=2, help="nodes per multi-node all_reduce group")] = 8,
    launcher: Annotated[str, typer.Option(help="multi-node launcher: slurm | mpirun | none")] = "slurm",
    slurm_mpi: Annotated[
        str, typer.Option(help="srun --mpi for all_reduce_perf (pmix for MPI builds)")
    ] = "none",
    jobs: Annotated[int, typer.Option(min=1, help="nodes / pairs measured at once")] = 8,
    dcgm_level: Annotated[
        int | None,
        typer.Option(min=1, max=4, help="dcgmi diag level (default: the plan's certification.dcgm_level)"),
    ] = None,
    storage_io: Annotated[
        bool,
        typer.Option(
            "--storage/--no-storage",
            help="fio sequential read/write on each node's storage targets (scratch, shared mounts with an "
            "fio floor) when the spec declares storage",
        ),
    ] = True,
    z_max: Annotated[float, typer.Option(help="robust z-score below the fleet that flags a unit")] = 3.5,
    mad_floor: Annotated[float, typer.Option(help="MAD floor, fraction of the fleet median")] = 0.01,
    cv_max: Annotated[
        float, typer.Option(help="run-to-run coefficient of variation that flags a unit")
    ] = 0.05,
    html: Annotated[Path | None, typer.Option(help="also write the HTML report here")] = None,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
) -> None:
    """Burn in drained nodes: repeat the full-tier performance tests, pairwise ib_write_bw on every leaf and
    cable, multi-node all_reduce; flag outliers against the fleet; certify (tier burnin) or drain."""
    from dataclasses import replace

    from clusterforge.burnin.analysis import AnalysisConfig
    from clusterforge.burnin.suite import SuiteOptions
    from clusterforge.flows import burnin as runner
    from clusterforge.records.burnin import BurninError

    console = human_console(fmt, output)
    if resume is None and (duration is None) == (iterations is None):
        raise typer.BadParameter("give --duration or --iterations (one of the two), or --resume RUN")
    if launcher not in ("slurm", "mpirun", "none"):
        raise typer.BadParameter(f"--launcher must be slurm, mpirun or none; got {launcher!r}")
    try:
        spec_path, plan_doc, inventory, names = _plan(spec, limit, resume, db)
        level = dcgm_level or int((plan_doc.get("certification") or {}).get("dcgm_level", 2))
        opts = runner.Options(
            iterations,
            parse_duration(duration) if duration else None,
            replace(SuiteOptions(), dcgm_level=level, storage=storage_io),
            AnalysisConfig(z_max=z_max, mad_floor=mad_floor, cv_max=cv_max),
            group_size,
            launcher,
            slurm_mpi,
            jobs,
        )
        nodes = NodeProgress(names)  # single-node suites per iteration: summary lines at scale / in CI
        with Summaries(console, nodes, "burn-in suites", aggregate(console, len(names))):
            out = runner.run(
                plan_doc,
                inventory,
                names,
                opts,
                spec_path=str(spec_path.resolve()),
                resume=resume,
                db_path=db,
                admit=admit,
                say=lambda s: console.print(literal(s), highlight=False, soft_wrap=True),
                progress=nodes,
            )
    except BurninError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(int(ExitCode.BAD_INPUT)) from exc
    except ClusterforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(int(exc.exit_code)) from exc
    _summary(console, out)
    if html is not None:
        write_report(out.burnin_id, "html", html, db)
        console.print(literal(f"wrote {html}"), highlight=False)
    if fmt == "json":
        write_report(out.burnin_id, "json", output, db)
    raise typer.Exit(out.exit_code)


def _plan(
    spec: Path | None, limit: str | None, resume: str | None, db: Path | None
) -> tuple[Path, dict[str, Any], Path, list[str]]:
    from clusterforge.flows.plan import load_plan
    from clusterforge.remote.inventory import resolve_hosts

    if resume is not None:
        from clusterforge.records._util import default_db_path
        from clusterforge.records.burnin import BurninDB

        with BurninDB(db or default_db_path()) as bdb:
            stored = bdb.get(resume)
        spec = Path(stored.spec_path) if stored.spec_path else spec
    if spec is None:
        raise typer.BadParameter("name the cluster spec (SPEC or CLUSTERFORGE_SPEC), or --resume a run")
    plan, inventory = load_plan(spec)
    names = resolve_hosts(inventory, limit)
    if not names:
        raise typer.BadParameter(f"--limit {limit!r} selects no node of {spec}")
    return spec, dict(plan.doc), inventory, names


def _summary(console: object, out: object) -> None:
    from rich.console import Console
    from rich.table import Table

    from clusterforge.burnin.runner import Outcome

    assert isinstance(console, Console) and isinstance(out, Outcome)
    t = Table(
        "node",
        "verdict",
        "suspected components",
        "pool",
        title=f"burn-in {out.burnin_id} ({out.iterations} iterations)",
    )
    for n, v in out.evaluation.nodes.items():
        style = {"pass": "green", "fail": "red", "error": "yellow"}[v.verdict]
        cells = (safe(", ".join(v.components) or "-"), safe(out.actions.get(n, "-")))
        t.add_row(safe(n), f"[{style}]{v.verdict}[/]", *cells)
    console.print(t)
    for n, v in out.evaluation.nodes.items():
        for f in v.findings:
            console.print(literal(f"  {n}: {f.summary}"), highlight=False, soft_wrap=True)
    for f in out.evaluation.fabric:
        console.print(literal(f"  fabric: {f.summary}"), highlight=False, soft_wrap=True)


def write_report(run: str, fmt: str, output: Path | None, db: Path | None) -> None:
    """Burn-in run RUN's report as html or json, to `output` or stdout."""
    from clusterforge.burnin import report
    from clusterforge.records._util import default_db_path
    from clusterforge.records.burnin import BurninDB

    with BurninDB(db or default_db_path()) as bdb:
        rid = bdb.get(run).id
        emit(report.to_html(bdb, rid) if fmt == "html" else report.to_json(bdb, rid) + "\n", output)
