"""`clusterforge provision SPEC`: configure every node to the declared state (rolling, drain → reboot →
resume), optionally certifying and admitting afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge import term
from clusterforge.cli.options import SpecArg
from clusterforge.run import extravars

ExtraVarsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--extra-vars", "-e", help="KEY=VALUE, a YAML/JSON mapping or @FILE, as Ansible's -e (repeatable)"
    ),
]


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
    converge_all_after_reboot: Annotated[
        bool,
        typer.Option(
            "--converge-all-after-reboot",
            help="after a reboot run every role again (default: only those that asked for the reboot; "
            "the rest is read back and must read the same)",
        ),
    ] = False,
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
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="run site.yml on every selected node (default: nodes a read finds as their last provision "
            "left them, with every quick check passing, are left alone)",
        ),
    ] = False,
    via: Annotated[
        str,
        typer.Option(
            help="how that read runs, as `clusterforge drift --via`: auto (the pool's engine when it has "
            "one, else ssh), ssh, or the pool's engine (slurm: one job step; kubernetes: a Job per node)"
        ),
    ] = "auto",
) -> None:
    """Configure every node of SPEC to the declared state (site.yml, rolling, drain → reboot → resume)."""
    from clusterforge.flows.provision import provision_flow
    from clusterforge.run.provision import Options

    console = term.console()
    rc = provision_flow(
        spec,
        Options(
            limit=limit,
            tags=tags,
            check=check,
            diff=diff,
            forks=forks,
            no_reboot=no_reboot,
            converge_all_after_reboot=converge_all_after_reboot,
            extra_vars=extravars.parse(extra_vars or []),
        ),
        console,
        inventory,
        full=full,
        via=via,
    )
    if rc == 0 and certify and not check:
        from clusterforge.flows.certify import certify_flow

        rc = int(certify_flow(spec, tier="quick", limit=limit, admit=True, console=console))
    raise typer.Exit(rc)
