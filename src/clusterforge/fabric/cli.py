"""`clusterforge fabric`: the compute fabrics against the plan (check) and the plan in vendor formats
(export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.errors import ExitCode

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

SpecArg = Annotated[Path, typer.Argument(help="cluster spec (YAML)")]
FORMATS = ("text", "json", "junit", "markdown")
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
    fmt: Annotated[str, typer.Option("--format", help="text | json | junit | markdown")] = "text",
    output: Annotated[Path | None, typer.Option(help="also write the report to this file")] = None,
    allow_unchecked: Annotated[
        bool, typer.Option("--allow-unchecked", help="devices the discovery lacks are not a deviation")
    ] = False,
) -> None:
    """Is every compute-fabric cable where the plan says? Exit 0 yes, 3 no, 2 bad input."""
    from clusterforge.fabric.check import check as run_check
    from clusterforge.fabric.formats import RENDERERS

    if fmt not in FORMATS:
        raise typer.BadParameter(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    report = run_check(_plan(spec), discovery)
    rendered = RENDERERS[fmt](report, allow_unchecked)
    typer.echo(rendered, nl=False)
    if output is not None:
        output.write_text(rendered, encoding="utf-8")
    raise typer.Exit(int(ExitCode.NOT_AS_DECLARED if report.deviated(allow_unchecked) else ExitCode.OK))


@app.command()
def export(
    spec: SpecArg,
    fmt: Annotated[str, typer.Option("--format", help="ibdiagnet-topo | dot")] = "dot",
    output: Annotated[Path | None, typer.Option(help="write here instead of stdout")] = None,
) -> None:
    """The plan's compute-fabric cabling as an ibdiagnet topology file or a PTM topology.dot."""
    from clusterforge.fabric.expected import expected_links
    from clusterforge.fabric.export import ibdiagnet_topo, ptm_dot
    from clusterforge.plan.cabling import cable_sheet

    if fmt not in EXPORTS:
        raise typer.BadParameter(f"--format must be one of {', '.join(EXPORTS)}, not {fmt!r}")
    plan = _plan(spec)
    sheet = cable_sheet(plan)
    links = expected_links(plan, sheet)
    if fmt == "dot":
        text = ptm_dot(links, {s.name: s.role for s in sheet.switches}, plan.name)
    else:
        text = ibdiagnet_topo(links, {s.name: s.model for s in sheet.switches})
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
