"""`clusterforge checks list|docs`: the check registry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def _write_or_check(text: str, output: Path | None, check: bool, command: str) -> None:
    """A file rendered from the registry: printed, written to OUTPUT, or with --check compared with OUTPUT
    (exit 3 and the command that regenerates it when it differs)."""
    if output is None:
        typer.echo(text, nl=False)
        return
    if check:
        same = output.is_file() and output.read_text() == text
        if not same:
            typer.echo(
                f"{output} is out of date: run `clusterforge checks {command} --output {output}`", err=True
            )
        raise typer.Exit(0 if same else 3)
    output.write_text(text)


@app.command("list")
def list_checks(
    source: Annotated[str | None, typer.Option(help="validator | burnin | passive")] = None,
) -> None:
    """One line per check: id, severity, mode, cost, action chain."""
    from clusterforge.checks.catalog import ALL

    for c in ALL:
        if source is None or c.source == source:
            typer.echo(f"{c.id}\t{c.severity}\t{c.mode}\t{c.cost}\t{c.chain()}")


@app.command("docs")
def docs(
    output: Annotated[Path | None, typer.Option(help="write here (default: print)")] = None,
    check: Annotated[
        bool, typer.Option("--check", help="exit 3 when OUTPUT differs from the registry (CI)")
    ] = False,
) -> None:
    """Render docs/checks.md from the registry."""
    from clusterforge.checks.docs import render

    _write_or_check(render(), output, check, "docs")
