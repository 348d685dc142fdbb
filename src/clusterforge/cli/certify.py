"""``clusterforge certify SPEC [--tier quick|full] [--limit] [--admit] [--jobs N]
[--via auto|ssh|slurm|kubernetes] [--format text|json|junit] [--output FILE]``: a thin face over
:func:`clusterforge.flows.certify.certify_flow`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli.options import OutputOpt, SpecArg, deprecated_option, format_option, human_console

certify_app = typer.Typer(
    help="Certify nodes against the plan: validators per node, records, certificates, admission.\n\n"
    "Exit codes: 0 every node passed; 1 the tool could not run; 2 bad input; 3 a node failed or errored.",
    add_completion=False,
    pretty_exceptions_enable=False,
    # a group stops parsing its own options at its first argument; here SPEC comes before the options
    context_settings={"allow_interspersed_args": True},
)


@certify_app.callback(invoke_without_command=True)
def certify(
    spec: SpecArg,
    tier: Annotated[
        str, typer.Option(help="quick (state, seconds) | full (+ DCGM and bandwidth) | burnin")
    ] = "quick",
    limit: Annotated[
        str | None, typer.Option(help="Ansible host pattern (node, pool_<pool>, sku_<sku>, ...)")
    ] = None,
    admit: Annotated[bool, typer.Option("--admit", help="admit passing nodes, drain the others")] = False,
    jobs: Annotated[int | None, typer.Option(help="nodes certified at once (default: all)", min=1)] = None,
    via: Annotated[
        str,
        typer.Option(
            help="auto: the spec's pool manager's engine for the quick tier when it is Slurm or Kubernetes, "
            "else ssh | ssh: the validators run here, one SSH session per node | slurm / kubernetes (quick "
            "tier, that pool manager): one Slurm job step / one Job per node, each node checks itself with "
            "the node checker (nodes the engine cannot run: SSH)"
        ),
    ] = "auto",
    fmt: Annotated[str, format_option("text", "json", "junit")] = "text",
    output: OutputOpt = None,
    junit: Annotated[Path | None, deprecated_option("--junit", "--format junit --output FILE")] = None,
    json_out: Annotated[Path | None, deprecated_option("--json", "--format json --output FILE")] = None,
) -> None:
    """Run the validators of TIER on every selected node, record the run, issue certificates."""
    from clusterforge.flows.certify import Outputs, certify_flow

    outputs = Outputs(junit=junit, json=json_out, jobs=jobs, fmt=fmt, output=output, via=via)
    raise typer.Exit(certify_flow(spec, tier, limit, admit, human_console(fmt, output), outputs))
