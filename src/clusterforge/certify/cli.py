"""``clusterforge certify SPEC [--tier quick|full] [--limit] [--admit] [--jobs N] [--junit P] [--json P]``.

Mounted by the main CLI with ``app.add_typer(certify_app, name="certify")``; a thin face over
:func:`clusterforge.flows.certify.certify_flow`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterforge.term import console

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
    spec: Annotated[
        Path,
        typer.Argument(help="cluster spec (YAML); default: $CLUSTERFORGE_SPEC", envvar="CLUSTERFORGE_SPEC"),
    ],
    tier: Annotated[
        str, typer.Option(help="quick (state, seconds) | full (+ DCGM and bandwidth) | burnin")
    ] = "quick",
    limit: Annotated[
        str | None, typer.Option(help="Ansible host pattern (node, pool_<pool>, sku_<sku>, ...)")
    ] = None,
    admit: Annotated[bool, typer.Option("--admit", help="admit passing nodes, drain the others")] = False,
    jobs: Annotated[int | None, typer.Option(help="nodes certified at once (default: all)", min=1)] = None,
    junit: Annotated[Path | None, typer.Option(help="write JUnit XML here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the JSON results here")] = None,
) -> None:
    """Run the validators of TIER on every selected node, record the run, issue certificates."""
    from clusterforge.flows.certify import Outputs, certify_flow

    rc = certify_flow(spec, tier, limit, admit, console(), Outputs(junit=junit, json=json_out, jobs=jobs))
    raise typer.Exit(rc)
