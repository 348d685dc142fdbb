"""`clusterforge drift SPEC`: does every node still match the declared cluster?"""

from __future__ import annotations

from typing import Annotated

import typer

from clusterforge.cli.options import FORMATS, OutputOpt, SpecArg, format_option, human_console
from clusterforge.cli.provision import ExtraVarsOpt
from clusterforge.run import extravars


def drift(
    spec: SpecArg,
    fmt: Annotated[str, format_option(*FORMATS)] = "text",
    output: OutputOpt = None,
    limit: Annotated[str | None, typer.Option(help="Ansible host pattern")] = None,
    allow_unreachable: Annotated[
        bool, typer.Option("--allow-unreachable", help="unreachable nodes are not drift")
    ] = False,
    fix: Annotated[bool, typer.Option("--fix", help="provision and re-certify the drifted nodes")] = False,
    shard: Annotated[
        str | None, typer.Option(help="check only shard i/n of the hosts (several controllers)")
    ] = None,
    extra_vars: ExtraVarsOpt = None,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="run site.yml --check --diff on every node (default: only where the applied state is "
            "unknown, of another plan, or found changed)",
        ),
    ] = False,
    via: Annotated[
        str,
        typer.Option(
            help="auto: the spec's pool manager's engine when it is Slurm or Kubernetes, else ssh | ssh: "
            "read the nodes from here | slurm / kubernetes (that pool manager): the quick validators and the "
            "applied-state reads run by each node on itself, as one Slurm job step / one Job per node (nodes "
            "the engine cannot run: SSH)"
        ),
    ] = "auto",
) -> None:
    """Does every node still match the declared cluster? Exit 0 none, 3 drift, 2 bad input, 1 tool failed."""
    from clusterforge.flows.drift import drift_flow

    ev = extravars.parse(extra_vars or [])
    console = human_console(fmt, output)
    code = drift_flow(spec, fmt, limit, allow_unreachable, fix, output, console, shard, ev, deep, via)
    raise typer.Exit(code)
