"""`clusterforge` command line: a thin face over the engine; commands mirror the Makefile targets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from clusterforge import term
from clusterforge.burnin import cli as burnin_cli
from clusterforge.certify import cli as certify_cli
from clusterforge.checks import cli as checks_cli
from clusterforge.childenv import scrub_environ
from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.fabric import cli as fabric_cli
from clusterforge.lab import cli as lab_cli
from clusterforge.metrics import cli as metrics_cli
from clusterforge.pool import cli as pool_cli
from clusterforge.pulumi import cli as pulumi_cli
from clusterforge.records import cli as records_cli
from clusterforge.records import merge_cli
from clusterforge.run import extravars

GENERATED = Path("inventory/generated")

app = typer.Typer(
    help="Describe, plan, provision, certify and keep true a GPU training cluster.\n\n"
    "Exit codes: 0 ok; 1 the tool failed; 2 bad input; 3 the cluster is not as declared.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = term.console()
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


# No default spec: a command that changes nodes must be told which cluster (or CLUSTERFORGE_SPEC), so a
# bare `clusterforge provision` on a production controller never stands up the lab.
SpecArg = Annotated[
    Path,
    typer.Argument(help="cluster spec (YAML); default: $CLUSTERFORGE_SPEC", envvar="CLUSTERFORGE_SPEC"),
]


ExtraVarsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--extra-vars", "-e", help="KEY=VALUE, a YAML/JSON mapping or @FILE, as Ansible's -e (repeatable)"
    ),
]


@app.command()
def plan(
    spec: SpecArg,
    out: Annotated[Path, typer.Option(help="output root; files go to OUT/<cluster>/")] = GENERATED,
    as_json: Annotated[bool, typer.Option("--json", help="print a machine-readable summary")] = False,
    svg: Annotated[bool, typer.Option(help="render topology.svg with Graphviz")] = True,
) -> None:
    """Validate SPEC and compile the plan: inventory, plan.json, cables, BOM, topology."""
    from clusterforge.flows.plan import write_outputs
    from clusterforge.plan import build_plan
    from clusterforge.plan.summary import print_summary, summary
    from clusterforge.spec import load_spec

    _check_out_dir(out)
    p = build_plan(load_spec(spec))
    dest = write_outputs(p, out, svg=svg)
    if as_json:
        typer.echo(json.dumps(summary(p), indent=2, sort_keys=True))
    else:
        print_summary(p, str(dest), console)


def _check_out_dir(out: Path) -> None:
    """`--out` must be a folder, or a path whose nearest existing part is one (checked before anything)."""
    from clusterforge.errors import InputError, Problem

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


@app.command()
def provision(
    spec: SpecArg,
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
    extra_vars: ExtraVarsOpt = None,
) -> None:
    """Configure every node of SPEC to the declared state (site.yml, rolling, drain → reboot → resume)."""
    from clusterforge.flows.provision import provision_flow
    from clusterforge.run.provision import Options

    rc = provision_flow(
        spec,
        Options(
            limit=limit,
            tags=tags,
            check=check,
            diff=diff,
            forks=forks,
            no_reboot=no_reboot,
            extra_vars=extravars.parse(extra_vars or []),
        ),
        console,
        inventory,
    )
    if rc == 0 and certify and not check:
        rc = _certify_after_provision(spec, limit)
    raise typer.Exit(rc)


@app.command()
def drift(
    spec: SpecArg,
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
    extra_vars: ExtraVarsOpt = None,
) -> None:
    """Does every node still match the declared cluster? Exit 0 none, 3 drift, 2 bad input, 1 tool failed."""
    from clusterforge.flows.drift import drift_flow

    if fmt not in ("text", "json", "junit", "markdown"):
        raise typer.BadParameter(f"--format must be text, json, junit or markdown, not {fmt!r}")
    ev = extravars.parse(extra_vars or [])
    raise typer.Exit(drift_flow(spec, fmt, limit, allow_unreachable, fix, output, console, shard, ev))


def _certify_after_provision(spec: Path, limit: str | None) -> int:
    from clusterforge.flows.certify import certify_flow

    return int(certify_flow(spec, tier="quick", limit=limit, admit=True, console=console))


collections_app = typer.Typer(no_args_is_help=True)


@collections_app.command("install")
def collections_install(
    dest: Annotated[
        Path | None, typer.Option(help="folder to hold ansible_collections/ (default: see docs/roles.md)")
    ] = None,
    wheel_dir: Annotated[Path | None, typer.Option(help="where the ansible wheel is cached")] = None,
    version: Annotated[str, typer.Option(help="the `ansible` package version to take them from")] = "",
    sha256: Annotated[str, typer.Option(help="that wheel's SHA-256")] = "",
) -> None:
    """Install ansible.posix and community.general from the pinned `ansible` wheel (no Galaxy)."""
    from clusterforge import ansible_deps, assets

    typer.echo(
        ansible_deps.install(
            dest or assets.collections_dir(),
            wheel_dir,
            version or ansible_deps.VERSION,
            sha256 or ansible_deps.SHA256,
        )
    )


app.command("exporter")(metrics_cli.exporter)

# Command groups: plain imports, so a broken module fails every invocation (and the tests) loudly
# instead of silently removing its commands.
app.add_typer(lab_cli.app, name="lab", help="Local lab: simulated GPU nodes on this machine.")
app.add_typer(pool_cli.app, name="pool", help="Pool membership: status, admit, drain.")
app.add_typer(records_cli.app, name="certificate", help="Node certificates: verify.")
app.add_typer(merge_cli.app, name="records", help="Records databases: merge shards.")
app.add_typer(pulumi_cli.app, name="inventory", help="Inventory from a Pulumi stack's outputs.")
app.add_typer(certify_cli.certify_app, name="certify", help="Certify nodes against the plan.")
app.add_typer(burnin_cli.burnin_app, name="burnin", help="Burn-in runs, fleet outlier detection.")
app.add_typer(fabric_cli.app, name="fabric", help="Compute fabrics against the plan: check, export.")
app.add_typer(burnin_cli.report_app, name="report", help="Reports of runs (burn-in HTML/JSON).")
app.add_typer(checks_cli.app, name="checks", help="The check registry: severities, costs, actions.")
app.add_typer(collections_app, name="collections", help="Third-party Ansible collections the roles use.")


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


if __name__ == "__main__":
    main()
