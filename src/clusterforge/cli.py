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
from clusterforge.fabric import cli as fabric_cli

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


@app.command()
def provision(
    spec: SpecArg = DEFAULT_SPEC,
    limit: Annotated[str | None, typer.Option(help="Ansible host pattern")] = None,
    tags: Annotated[str | None, typer.Option(help="only these role tags")] = None,
    check: Annotated[bool, typer.Option("--check", help="predict changes, change nothing")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="show before/after of each change")] = False,
    forks: Annotated[
        int | None, typer.Option(help="parallel hosts (default: sized from the inventory)")
    ] = None,
    no_reboot: Annotated[bool, typer.Option("--no-reboot", help="leave boot-time changes pending")] = False,
    certify: Annotated[
        bool, typer.Option(help="run the quick tier and admit passing nodes afterwards")
    ] = False,
    inventory: Annotated[
        Path | None,
        typer.Option(
            help="use this inventory folder (e.g. from a Pulumi stack) instead of writing one from the plan"
        ),
    ] = None,
) -> None:
    """Configure every node of SPEC to the declared state (site.yml, rolling, drain → reboot → resume)."""
    from clusterforge.run.pipeline import provision_flow
    from clusterforge.run.provision import Options

    rc = provision_flow(
        spec,
        Options(limit=limit, tags=tags, check=check, diff=diff, forks=forks, no_reboot=no_reboot),
        console,
        inventory,
    )
    if rc == 0 and certify and not check:
        rc = _certify_after_provision(spec, limit)
    raise typer.Exit(rc)


@app.command()
def drift(
    spec: SpecArg = DEFAULT_SPEC,
    fmt: Annotated[str, typer.Option("--format", help="text | json | junit | markdown")] = "text",
    limit: Annotated[str | None, typer.Option(help="Ansible host pattern")] = None,
    allow_unreachable: Annotated[
        bool, typer.Option("--allow-unreachable", help="unreachable nodes are not drift")
    ] = False,
    fix: Annotated[bool, typer.Option("--fix", help="provision and re-certify the drifted nodes")] = False,
    output: Annotated[Path | None, typer.Option(help="also write the report to this file")] = None,
    shard: Annotated[
        str | None, typer.Option(help="check only shard i/n of the hosts (several controllers)")
    ] = None,
) -> None:
    """Does every node still match the declared cluster? Exit 0 none, 3 drift, 2 bad input, 1 tool failed."""
    from clusterforge.drift.pipeline import drift_flow

    if fmt not in ("text", "json", "junit", "markdown"):
        raise typer.BadParameter(f"--format must be text, json, junit or markdown, not {fmt!r}")
    raise typer.Exit(drift_flow(spec, fmt, limit, allow_unreachable, fix, output, console, shard))


def _certify_after_provision(spec: Path, limit: str | None) -> int:
    try:
        from clusterforge.certify.pipeline import certify_flow
    except ImportError:
        console.print(
            "[yellow]certification is not part of this build yet: nodes provisioned, not admitted[/]"
        )
        return 0
    return int(certify_flow(spec, tier="quick", limit=limit, admit=True, console=console))


def _mount_optional(module: str, attr: str, name: str, help_text: str) -> None:
    """Attach a sub-application that lives in its own package."""
    import importlib

    try:
        sub = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return
    app.add_typer(sub, name=name, help=help_text)


_mount_optional("clusterforge.lab.cli", "app", "lab", "Local lab: simulated GPU nodes on this machine.")
_mount_optional("clusterforge.pool.cli", "app", "pool", "Pool membership: status, admit, drain.")
_mount_optional("clusterforge.records.cli", "app", "certificate", "Node certificates: verify.")
_mount_optional("clusterforge.records.merge_cli", "app", "records", "Records databases: merge shards.")
_mount_optional("clusterforge.pulumi.cli", "app", "inventory", "Inventory from a Pulumi stack's outputs.")
_mount_optional("clusterforge.certify.cli", "certify_app", "certify", "Certify nodes against the plan.")
_mount_optional("clusterforge.burnin.cli", "burnin_app", "burnin", "Burn-in runs, fleet outlier detection.")
app.add_typer(fabric_cli.app, name="fabric", help="Compute fabrics against the plan: check, export.")
_mount_optional("clusterforge.burnin.cli", "report_app", "report", "Reports of runs (burn-in HTML/JSON).")


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
        err.print(
            f"clusterforge failed: {type(exc).__name__}: {exc} (set CLUSTERFORGE_DEBUG=1 for a traceback)",
            soft_wrap=True,
        )
        sys.exit(int(ExitCode.TOOL_FAILED))


if __name__ == "__main__":
    main()
