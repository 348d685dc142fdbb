"""`clusterforge fabric`: the compute fabrics against the plan (check) and the plan in vendor formats
(export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli.options import FORMATS, OutputOpt, SpecArg, emit, format_option
from clusterforge.errors import ExitCode

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

EXPORTS = ("ibdiagnet-topo", "dot")


def _plan(spec: Path):  # type: ignore[no-untyped-def]
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    return build_plan(load_spec(spec))


@app.command()
def check(
    spec: SpecArg,
    discovery: Annotated[
        Path,
        typer.Option(
            help="recorded discovery: a folder of per-device lldpctl outputs and/or ibnetdiscover/iblinkinfo"
        ),
    ],
    fmt: Annotated[str, format_option(*FORMATS)] = "text",
    output: OutputOpt = None,
    allow_unchecked: Annotated[
        bool, typer.Option("--allow-unchecked", help="devices the discovery lacks are not a deviation")
    ] = False,
) -> None:
    """Is every compute-fabric cable where the plan says? Exit 0 yes, 3 no, 2 bad input."""
    from clusterforge.fabric.check import check as run_check
    from clusterforge.fabric.formats import RENDERERS

    report = run_check(_plan(spec), discovery)
    emit(RENDERERS[fmt](report, allow_unchecked), output)
    if output is not None:  # stdout keeps the text for people
        typer.echo(RENDERERS["text"](report, allow_unchecked), nl=False)
    raise typer.Exit(int(ExitCode.NOT_AS_DECLARED if report.deviated(allow_unchecked) else ExitCode.OK))


@app.command()
def export(
    spec: SpecArg,
    fmt: Annotated[str, format_option(*EXPORTS)] = "dot",
    output: OutputOpt = None,
) -> None:
    """The plan's compute-fabric cabling as an ibdiagnet topology file or a PTM topology.dot."""
    from clusterforge.fabric.expected import expected_links
    from clusterforge.fabric.export import ibdiagnet_topo, ptm_dot
    from clusterforge.plan.cabling import cable_sheet

    plan = _plan(spec)
    sheet = cable_sheet(plan)
    links = expected_links(plan, sheet)
    if fmt == "dot":
        text = ptm_dot(links, {s.name: s.role for s in sheet.switches}, plan.name)
    else:
        text = ibdiagnet_topo(links, {s.name: s.model for s in sheet.switches})
    emit(text, output)
