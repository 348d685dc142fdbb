"""`clusterforge` command line: a thin face over the engine; commands mirror the Makefile targets.

One module per command group (`cli/certify.py` is `clusterforge certify`, ...); the option convention they
share (SPEC positional, `--format`, `--output`, deprecated spellings) is `cli/options.py`. Only this package
imports Typer: the stages below it are plain Python.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from clusterforge import term
from clusterforge.childenv import scrub_environ
from clusterforge.cli import (
    burnin,
    certificate,
    certify,
    checks,
    collections,
    drift,
    exporter,
    fabric,
    inventory,
    lab,
    plan,
    pool,
    provision,
    records,
    report,
)
from clusterforge.errors import ClusterforgeError, ExitCode

app = typer.Typer(
    help="Describe, plan, provision, certify and keep true a GPU training cluster.\n\n"
    "Exit codes: 0 ok; 1 the tool failed; 2 bad input; 3 the cluster is not as declared.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err = term.console(stderr=True)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"clusterforge {version('clusterforge')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit"),
    ] = False,
) -> None:
    """Describe, plan, provision, certify and keep true a GPU training cluster."""


app.command()(plan.plan)
app.command()(provision.provision)
app.command()(drift.drift)
app.command("exporter")(exporter.exporter)

# Command groups: plain imports, so a broken module fails every invocation (and the tests) loudly
# instead of silently removing its commands.
app.add_typer(lab.app, name="lab", help="Local lab: simulated GPU nodes on this machine.")
app.add_typer(pool.app, name="pool", help="Pool membership: status, admit, drain.")
app.add_typer(certificate.app, name="certificate", help="Node certificates: verify.")
app.add_typer(records.app, name="records", help="Records databases: merge shards.")
app.add_typer(inventory.app, name="inventory", help="Inventory from a Pulumi stack's outputs.")
app.add_typer(certify.certify_app, name="certify", help="Certify nodes against the plan.")
app.add_typer(burnin.burnin_app, name="burnin", help="Burn-in runs, fleet outlier detection.")
app.add_typer(fabric.app, name="fabric", help="Compute fabrics against the plan: check, export.")
app.add_typer(report.report_app, name="report", help="Reports of runs (burn-in HTML/JSON).")
app.add_typer(checks.app, name="checks", help="The check registry: severities, costs, actions.")
app.add_typer(collections.app, name="collections", help="Third-party Ansible collections the roles use.")


def main() -> None:
    """Entry point: map errors to exit codes and print them without a traceback.

    Usage errors (unknown option, missing argument) exit 2 through Typer's standalone mode.
    """
    from clusterforge.term import error_line, literal

    scrub_environ()  # signing-key variables stay in this process: no child (ansible, validators) gets them
    try:
        app()
    except ClusterforgeError as exc:  # the message quotes user input: printed literally, controls escaped
        err.print(error_line("error", exc), highlight=False, soft_wrap=True)
        sys.exit(int(exc.exit_code))
    except Exception as exc:  # unexpected: the tool itself failed
        if os.environ.get("CLUSTERFORGE_DEBUG"):
            raise
        err.print(
            literal(
                f"clusterforge failed: {type(exc).__name__}: {exc} (set CLUSTERFORGE_DEBUG=1 for a traceback)"
            ),
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(int(ExitCode.TOOL_FAILED))
