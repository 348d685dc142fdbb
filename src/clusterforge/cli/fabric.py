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


@app.command("sm-config")
def sm_config(
    spec: SpecArg,
    out_dir: Annotated[
        Path, typer.Option("--dir", help="folder to write opensm.conf, partitions.conf, ... into")
    ],
    fabric: Annotated[
        str | None, typer.Option(help="InfiniBand fabric of the spec (default: the only one)")
    ] = None,
    discovery: Annotated[
        Path | None,
        typer.Option(
            help="ibnetdiscover output of the built fabric: its top-tier GUIDs become ftree's roots"
        ),
    ] = None,
    sm_priority: Annotated[
        int, typer.Option(min=0, max=15, help="this SM's priority (highest is master)")
    ] = 15,
) -> None:
    """OpenSM configuration from the plan for an InfiniBand fabric (docs/fabric.md). Exit 0, 2 bad input."""
    from clusterforge.errors import InputError, Problem
    from clusterforge.fabric.observed import switch_name
    from clusterforge.hw import ParseError, ibnetdiscover
    from clusterforge.switchcfg.opensm import render_opensm

    plan = _plan(spec)
    ib = [f["name"] for f in plan.doc["fabrics"] if f["type"] == "infiniband"]
    name = fabric or (ib[0] if len(ib) == 1 else None)
    if name not in ib:
        raise InputError(
            [
                Problem(
                    str(spec), "fabrics.compute", f"one of {ib}", repr(fabric), "name an InfiniBand fabric"
                )
            ],
            "no such InfiniBand fabric",
        )
    guids = None
    if discovery is not None:
        try:
            topo = ibnetdiscover.parse(discovery.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ParseError) as exc:
            raise InputError(
                [Problem(str(discovery), "", "an ibnetdiscover output", type(exc).__name__, "re-record it")],
                "unreadable discovery",
            ) from None
        guids = {switch_name(n.description): n.guid for n in topo.nodes if n.kind == "switch"}
    try:
        files = render_opensm(plan.doc, str(name), root_guids=guids, sm_priority=sm_priority)
    except ValueError as exc:
        raise InputError(
            [
                Problem(
                    str(discovery),
                    "",
                    "every top-tier switch of the plan",
                    str(exc),
                    "discover the whole fabric",
                )
            ],
            "discovery does not cover the plan",
        ) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    for fname, text in sorted(files.items()):
        (out_dir / fname).write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out_dir / fname}")
