"""`clusterforge fabric`: the compute fabrics against the plan (check) and the plan in vendor formats
(export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from clusterforge.cli.options import FORMATS, OutputOpt, SpecArg, emit, format_option
from clusterforge.errors import ExitCode, InputError, Problem

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

EXPORTS = ("ibdiagnet-topo", "dot")
SmPriorityOpt = Annotated[int, typer.Option(min=0, max=15, help="this SM's priority (highest is master)")]


def _plan(spec: Path):  # type: ignore[no-untyped-def]
    from clusterforge.plan import build_plan
    from clusterforge.spec import load_spec

    return build_plan(load_spec(spec))


@app.command()
def check(
    spec: SpecArg,
    discovery: Annotated[
        Path | None,
        typer.Option(
            help="recorded discovery: a folder of per-device lldpctl outputs and/or ibnetdiscover/iblinkinfo "
            "(optionally switch-state/<switch>/ and sm/: the switches' and the SM's recorded state; "
            "with --collect: the folder to record into, default a new temporary folder)"
        ),
    ] = None,
    collect: Annotated[
        bool,
        typer.Option(
            "--collect",
            help="record the discovery first: each RoCE node's `lldpctl -f json` over SSH (the inventory's "
            "settings); nodes that cannot answer are listed and their links not checked",
        ),
    ] = False,
    fmt: Annotated[str, format_option(*FORMATS)] = "text",
    output: OutputOpt = None,
    allow_unchecked: Annotated[
        bool,
        typer.Option(
            "--allow-unchecked",
            help="devices the discovery lacks, and switches/SMs with no recorded state, are not a deviation",
        ),
    ] = False,
    sm_priority: Annotated[
        int,
        typer.Option(
            min=0, max=15, help="the priority the recorded SM (sm/) should run at (a standby: below 15)"
        ),
    ] = 15,
) -> None:
    """Is every compute-fabric cable where the plan says, and is each recorded switch/SM state what the plan
    renders? Exit 0 yes, 3 no, 2 bad input."""
    from clusterforge.fabric.formats import RENDERERS
    from clusterforge.flows.fabric_check import check as run_check

    if collect:
        import tempfile

        from clusterforge.flows.fabric_collect import collect as run_collect
        from clusterforge.flows.plan import load_plan
        from clusterforge.term import safe

        plan, inventory = load_plan(spec)
        folder = discovery or Path(tempfile.mkdtemp(prefix=f"cf-discovery-{plan.name}-"))
        got = run_collect(plan.doc, inventory, folder)
        typer.echo(f"discovery: {len(got.written)} nodes' LLDP views in {folder}", err=True)
        for node, why in sorted(got.missed.items()):
            typer.echo(f"  not collected: {safe(node)}: {safe(why)}", err=True)
        if got.missed and not got.written:  # nothing measured: not a verdict on the cabling, nor bad input
            typer.echo("fabric check: no node answered; nothing to compare", err=True)
            raise typer.Exit(int(ExitCode.TOOL_FAILED))
        discovery = folder
    elif discovery is None:
        raise typer.BadParameter("give --discovery DIR (a recorded discovery) or --collect")
    else:
        plan = _plan(spec)
    report = run_check(plan, discovery, sm_priority=sm_priority)
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


def _ib_fabric(spec: Path, plan_doc: dict[str, Any], fabric: str | None) -> str:
    """The InfiniBand fabric named `fabric`, or the spec's only one; InputError otherwise."""
    ib = [f["name"] for f in plan_doc["fabrics"] if f["type"] == "infiniband"]
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
    return str(name)


def _root_guids(discovery: Path | None) -> dict[str, str] | None:
    """Switch name -> node GUID from an ibnetdiscover output; InputError when it cannot be read."""
    from clusterforge.fabric.observed import switch_guids
    from clusterforge.hw import ParseError, ibnetdiscover

    if discovery is None:
        return None
    try:
        topo = ibnetdiscover.parse(discovery.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ParseError) as exc:
        raise InputError(
            [Problem(str(discovery), "", "an ibnetdiscover output", type(exc).__name__, "re-record it")],
            "unreadable discovery",
        ) from None
    return switch_guids(topo)


def _roots_missing(discovery: Path | None, exc: ValueError) -> InputError:
    return InputError(
        [
            Problem(
                str(discovery), "", "every top-tier switch of the plan", str(exc), "discover the whole fabric"
            )
        ],
        "discovery does not cover the plan",
    )


FabricOpt = Annotated[str | None, typer.Option(help="InfiniBand fabric of the spec (default: the only one)")]
IbDiscoveryOpt = Annotated[
    Path | None,
    typer.Option(help="ibnetdiscover output of the built fabric: its top-tier GUIDs become ftree's roots"),
]


@app.command("sm-config")
def sm_config(
    spec: SpecArg,
    out_dir: Annotated[
        Path, typer.Option("--dir", help="folder to write opensm.conf, partitions.conf, ... into")
    ],
    fabric: FabricOpt = None,
    discovery: IbDiscoveryOpt = None,
    sm_priority: SmPriorityOpt = 15,
) -> None:
    """OpenSM configuration from the plan for an InfiniBand fabric (docs/fabric.md). Exit 0, 2 bad input."""
    from clusterforge.switchcfg.opensm import render_opensm

    plan = _plan(spec)
    name = _ib_fabric(spec, plan.doc, fabric)
    guids = _root_guids(discovery)
    try:
        files = render_opensm(plan.doc, name, root_guids=guids, sm_priority=sm_priority)
    except ValueError as exc:
        raise _roots_missing(discovery, exc) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    for fname, text in sorted(files.items()):
        (out_dir / fname).write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out_dir / fname}")


@app.command("sm-readback")
def sm_readback(
    spec: SpecArg,
    outputs: Annotated[
        Path,
        typer.Option(
            help="folder of the running SM's files, copied from its host: opensm.conf (required), "
            "partitions.conf, qos-policy.conf, root_guids.conf"
        ),
    ],
    fabric: FabricOpt = None,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    sm_priority: SmPriorityOpt = 15,
    discovery: IbDiscoveryOpt = None,
) -> None:
    """A running OpenSM's configuration files against what `fabric sm-config` renders from the plan (same
    options). Exit 0 as planned, 3 not, 2 bad input (files not given are listed as not checked)."""
    import json

    from clusterforge.switchcfg.recorded import read_sm
    from clusterforge.term import terminal_text

    plan = _plan(spec)
    name = _ib_fabric(spec, plan.doc, fabric)
    guids = _root_guids(discovery)
    try:
        r = read_sm(plan.doc, name, outputs, root_guids=guids, sm_priority=sm_priority)
    except ValueError as exc:
        if discovery is None:  # the CLI's own checks leave only missing roots: anything else is a bug
            raise
        raise _roots_missing(discovery, exc) from None
    if fmt == "json":
        text = json.dumps({"fabric": r.subject, **r.document(), "paths": r.paths}, indent=2) + "\n"
    else:
        lines = r.lines(f"SM of {r.subject}")
        lines += [f"  the SM reads {f} at {p}" for f, p in sorted(r.paths.items())]
        text = terminal_text("\n".join(lines)) + "\n"  # values from the SM's files: escaped
    emit(text, output)
    raise typer.Exit(int(ExitCode.OK if r.ok else ExitCode.NOT_AS_DECLARED))


@app.command("switch-readback")
def switch_readback(
    spec: SpecArg,
    switch: Annotated[str, typer.Option(help="the planned RoCE switch the outputs were recorded on")],
    outputs: Annotated[
        Path,
        typer.Option(
            help="folder of recorded outputs (any subset, at least one): SONiC show-interfaces-status.txt, "
            "ecnconfig-l.txt, mmuconfig-l.txt, show-pfc-counters.txt, show-queue-counters.txt; Cumulus "
            "nv-show-applied.json, nv-show-interface.json"
        ),
    ],
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    os_name: Annotated[
        str | None,
        typer.Option(
            "--os",
            help="the switch's OS, sonic or cumulus (default: the OS whose files the folder holds)",
        ),
    ] = None,
) -> None:
    """A SONiC or Cumulus Linux (NVUE) switch's QoS/MTU state against what the plan renders for it. Exit 0
    as planned, 3 not, 2 bad input (what was not recorded is listed as not checked)."""
    import json

    from clusterforge.switchcfg.recorded import read_switch
    from clusterforge.term import terminal_text

    plan = _plan(spec)
    try:
        r = read_switch(plan.doc, switch, outputs, os_name)
    except ValueError as exc:
        raise InputError(
            [Problem(str(spec), "fabrics", "a RoCE switch of the plan", repr(switch), str(exc))],
            "no such switch",
        ) from None
    if fmt == "json":
        text = json.dumps({"switch": r.subject, **r.document()}, indent=2) + "\n"
    else:
        text = terminal_text("\n".join(r.lines(r.subject))) + "\n"  # values from the switch's outputs
    emit(text, output)
    raise typer.Exit(int(ExitCode.OK if r.ok else ExitCode.NOT_AS_DECLARED))
