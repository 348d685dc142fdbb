"""`clusterforge report burnin RUN`: the report of a recorded burn-in run (HTML or JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli.burnin import write_report
from clusterforge.cli.options import OutputOpt, deprecated_option, format_option
from clusterforge.errors import ExitCode

report_app = typer.Typer(
    help="Reports of recorded runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@report_app.callback()
def _report() -> None:
    """Reports of recorded runs."""


@report_app.command("burnin")
def report_burnin(
    run: Annotated[str, typer.Argument(help="burn-in run id (a unique prefix will do)")],
    fmt: Annotated[str, format_option("html", "json")] = "html",
    output: OutputOpt = None,
    db: Annotated[Path | None, typer.Option(help="records database (default $CLUSTERFORGE_DB)")] = None,
    html: Annotated[Path | None, deprecated_option("--html", "--format html --output FILE")] = None,
    json_out: Annotated[Path | None, deprecated_option("--json", "--format json --output FILE")] = None,
) -> None:
    """The burn-in report: verdicts, suspected components, fleet and per-node plots (HTML), or JSON."""
    from clusterforge.records.burnin import BurninError

    wanted = [("html", html), ("json", json_out)] if html or json_out else [(fmt, output)]
    try:
        for kind, dest in wanted:
            write_report(run, kind, dest, db)
            if dest is not None:
                typer.echo(f"wrote {dest}")
    except BurninError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(int(ExitCode.BAD_INPUT)) from exc
