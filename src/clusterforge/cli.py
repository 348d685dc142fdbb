"""`clusterforge` command line: a thin face over the engine; commands mirror the Makefile targets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from clusterforge.errors import ClusterforgeError, ExitCode

DEFAULT_SPEC = Path("inventory/clusters/lab.yaml")
GENERATED = Path("inventory/generated")

app = typer.Typer(
    help="Describe, plan, provision, certify and keep true a GPU training cluster.\n\n"
    "Exit codes: 0 ok; 1 the tool failed; 2 bad input; 3 the cluster is not as declared.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console(stderr=False)
err = Console(stderr=True)

@app.callback()
def _root() -> None:
    """Describe, plan, provision, certify and keep true a GPU training cluster."""


SpecArg = Annotated[Path, typer.Argument(help="cluster spec (YAML)", show_default=True)]


@app.command()
def plan(
    spec: SpecArg = DEFAULT_SPEC,
    out: Annotated[Path, typer.Option(help="output root; files go to OUT/<cluster>/")] = GENERATED,
    as_json: Annotated[bool, typer.Option("--json", help="print a machine-readable summary")] = False,
    svg: Annotated[bool, typer.Option(help="render topology.svg with Graphviz")] = True,
) -> None:
    """Validate SPEC and compile the plan: inventory, plan.json, cables, BOM, topology."""
    from clusterforge.plan import build_plan
    from clusterforge.plan.outputs import write_outputs
    from clusterforge.plan.summary import print_summary, summary
    from clusterforge.spec import load_spec

    p = build_plan(load_spec(spec))
    dest = write_outputs(p, out, svg=svg)
    if as_json:
        typer.echo(json.dumps(summary(p), indent=2, sort_keys=True))
    else:
        print_summary(p, str(dest), console)


def _mount_optional(module: str, attr: str, name: str, help_text: str) -> None:
    """Attach a sub-application that lives in its own package."""
    import importlib

    try:
        sub = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return
    app.add_typer(sub, name=name, help=help_text)


_mount_optional("clusterforge.lab.cli", "app", "lab", "Local lab: simulated GPU nodes on this machine.")


def main() -> None:
    """Entry point: map errors to exit codes and print them without a traceback.

    Usage errors (unknown option, missing argument) exit 2 through Typer's standalone mode.
    """
    try:
        app()
    except ClusterforgeError as exc:
        err.print(f"[red]error[/]: {exc}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(int(exc.exit_code))
    except Exception as exc:  # unexpected: the tool itself failed
        if os.environ.get("CLUSTERFORGE_DEBUG"):
            raise
        err.print(f"clusterforge failed: {type(exc).__name__}: {exc} (set CLUSTERFORGE_DEBUG=1 for a traceback)",
                  soft_wrap=True)
        sys.exit(int(ExitCode.TOOL_FAILED))
