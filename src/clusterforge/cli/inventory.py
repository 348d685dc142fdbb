"""`clusterforge inventory ...` (Typer sub-app, mounted by the main CLI): inventory from a Pulumi stack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.errors import ClusterforgeError

STACK_DIR = Path("stacks/cluster")
GENERATED = Path("inventory/generated")

app = typer.Typer(help="Ansible inventory from other sources than `clusterforge plan`.", no_args_is_help=True)


@app.callback()
def _root() -> None:
    """Ansible inventory from other sources than `clusterforge plan`."""


@app.command("from-stack")
def from_stack(
    stack: Annotated[str | None, typer.Option(help="Pulumi stack (default: the selected one)")] = None,
    out: Annotated[Path, typer.Option(help="output root; files go to OUT/<cluster>/")] = GENERATED,
    stack_dir: Annotated[Path, typer.Option(help="the Pulumi project")] = STACK_DIR,
    from_json: Annotated[
        Path | None,
        typer.Option(
            "--from-json", help="read a saved `pulumi stack output --json` document instead of running pulumi"
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="seconds to wait for `pulumi stack output`")] = 120.0,
) -> None:
    """Write OUT/<cluster>/hosts.yml and group_vars/ from `pulumi stack output --json` (as `plan` would)."""
    from clusterforge.pulumi.stackout import parse_outputs, read_stack_outputs, write_inventory

    try:
        if from_json is not None:
            outputs = parse_outputs(from_json.read_text(), str(from_json))
            source = str(from_json)
        else:
            outputs = read_stack_outputs(stack, stack_dir, timeout)
            source = f"stack {stack or '(selected)'}"
        dest = write_inventory(outputs, out, source)
    except ClusterforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(int(exc.exit_code)) from None
    except OSError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"wrote {dest}/hosts.yml and {dest}/group_vars/ from {source} "
        f"(cluster {outputs['cluster']}, plan {str(outputs['plan_hash'])[:12]})"
    )
