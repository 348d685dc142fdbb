"""``clusterforge lab fault NODE KIND [--clear] [-p KEY=VALUE ...]`` (the lead mounts ``fault_command``).

Host side only (imports typer and the lab); never copied into node images.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from . import faults

DEFAULT_PLAN = Path("inventory/generated/lab/plan.json")


def _default_lab(plan: Path) -> faults.LabLike:
    from clusterforge.lab.lab import Lab

    return Lab(plan)


#: How the command gets a lab from ``--plan`` (tests and the lead may replace it).
LAB_FACTORY: Callable[[Path], faults.LabLike] = _default_lab


def _kinds_help() -> str:
    return "; ".join(f"{k}" + (f" [{t}=N|all]" if t else "") for k, (_, t, _) in faults.KINDS.items())


def fault_command(
    node: Annotated[str, typer.Argument(help="lab node name")],
    kind: Annotated[
        str, typer.Argument(help=f"fault kind, or 'list' for the node's active faults: {_kinds_help()}")
    ],
    clear: Annotated[
        bool, typer.Option("--clear", help="clear the fault instead of setting it ('all' clears every fault)")
    ] = False,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="fault parameter KEY=VALUE, e.g. gpu=3, rail=all, factor=0.5"),
    ] = None,
    plan: Annotated[Path, typer.Option(help="the lab's plan.json (or spec)")] = DEFAULT_PLAN,
) -> None:
    """Inject (or clear) a simulated hardware fault in a running lab node; it persists across reboots."""
    params: dict[str, Any] = {}
    for item in param or []:
        if "=" not in item:
            typer.echo(f"error: --param {item!r} is not KEY=VALUE", err=True)
            raise typer.Exit(2)
        k, v = item.split("=", 1)
        params[k] = v
    if kind != "list" and kind not in faults.KINDS and not (clear and kind == "all"):
        typer.echo(f"error: unknown fault kind {kind!r}; known: {', '.join(faults.KINDS)}", err=True)
        raise typer.Exit(2)
    lab = LAB_FACTORY(plan)
    if kind == "list":
        r = lab.exec(node, ["/usr/lib/clusterforge-sim/clusterforge-sim", "fault", "list"], timeout=60.0)
        typer.echo(r.stdout.rstrip() or r.stderr.rstrip())
        raise typer.Exit(0 if r.returncode == 0 else 1)
    try:
        active = faults.apply(lab, node, kind, clear=clear, **params)
    except faults.FaultError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    typer.echo(json.dumps({"node": node, "active": active}, indent=1, sort_keys=True))
