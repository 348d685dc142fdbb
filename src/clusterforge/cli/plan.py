"""`clusterforge plan SPEC`: validate the spec and compile the plan's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli.options import (
    OutputOpt,
    SpecArg,
    emit,
    file_console,
    format_option,
    human_console,
    json_flag,
)
from clusterforge.errors import InputError, Problem

GENERATED = Path("inventory/generated")


def plan(
    spec: SpecArg,
    out: Annotated[Path, typer.Option(help="output root; files go to OUT/<cluster>/")] = GENERATED,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    svg: Annotated[bool, typer.Option(help="render topology.svg with Graphviz")] = True,
    as_json: Annotated[bool, json_flag()] = False,
) -> None:
    """Validate SPEC and compile the plan: inventory, plan.json, cables, BOM, topology."""
    from clusterforge.flows.plan import write_outputs
    from clusterforge.plan import build_plan
    from clusterforge.plan.summary import print_summary, summary
    from clusterforge.spec import load_spec

    fmt = "json" if as_json else fmt
    _check_out_dir(out)
    loaded = load_spec(spec)
    _print_warnings(loaded.warnings)
    p = build_plan(loaded)
    dest = write_outputs(p, out, svg=svg)
    if fmt == "json":
        emit(json.dumps(summary(p), indent=2, sort_keys=True), output)
    elif output is None:
        print_summary(p, str(dest), human_console(fmt, output))
    else:
        with output.open("w", encoding="utf-8") as fh:
            print_summary(p, str(dest), file_console(fh))


def _print_warnings(warnings: tuple[Problem, ...]) -> None:
    """The spec's warnings, one line each on stderr (never in the report: the plan is still written)."""
    if not warnings:
        return
    from clusterforge import term

    err = term.console(stderr=True)
    for w in warnings:
        err.print(f"[yellow]warning[/]: {term.safe(w.render())}")


def _check_out_dir(out: Path) -> None:
    """`--out` must be a folder, or a path whose nearest existing part is one (checked before anything)."""
    p = out
    while not (p.exists() or p.is_symlink()):
        if p.parent == p:
            return
        p = p.parent
    if not p.is_dir():
        raise InputError(
            [
                Problem(
                    str(out),
                    "--out",
                    "a folder for the generated files (or a path where one can be made)",
                    f"'{p}' is not a folder",
                    "point --out at a folder",
                )
            ],
            "bad --out",
        )
