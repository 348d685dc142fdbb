"""`clusterforge lab ...`: the local lab (SPEC first where a command takes one; default: the lab plan)."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clusterforge.cli.options import (
    OutputOpt,
    deprecated_option,
    emit,
    format_option,
    json_flag,
    pick_format,
    spec_from,
    split_spec,
)
from clusterforge.errors import ClusterforgeError
from clusterforge.extras import require

if TYPE_CHECKING:
    from clusterforge.lab.lab import Lab

DEFAULT_PLAN = Path("inventory/generated/lab/plan.json")
app = typer.Typer(
    help="The local lab: simulated GPU nodes in systemd-nspawn on this machine.", no_args_is_help=True
)
infra_app = typer.Typer(
    help="Shared pieces: image, bridges, Slurm controller, apt repository.", no_args_is_help=True
)
node_app = typer.Typer(help="One node at a time (so a Pulumi resource can own each).", no_args_is_help=True)
app.add_typer(infra_app, name="infra")
app.add_typer(node_app, name="node")

PlanOpt = Annotated[Path | None, deprecated_option("--plan", "the positional SPEC")]
SpecArg = Annotated[Path | None, typer.Argument(help="spec YAML or plan.json (default: the lab plan)")]
NodeArgs = Annotated[
    list[str],
    typer.Argument(
        help="[SPEC] NODE: the spec YAML or plan.json (default: the lab plan), then the node",
        show_default=False,
    ),
]


def _node_args(
    args: list[str], plan: Path | None, names: str, variadic: bool = False
) -> tuple[Path | None, list[str]]:
    """`[SPEC] NODE ...` → (spec, [NODE, ...]). With a fixed count of names, one argument more is the spec;
    before a variable tail (ssh's command) the spec is told by its suffix (.yaml, .yml, .json)."""
    n = len(names.split())
    if variadic:
        spec, rest = split_spec(args, None)
    else:
        spec, rest = (Path(args[0]), list(args[1:])) if len(args) == n + 1 else (None, list(args))
        if len(rest) != n:
            raise typer.BadParameter(f"expected [SPEC] {names}; got {' '.join(args) or 'nothing'}")
    spec = spec_from(spec, ("--plan", plan))
    if len(rest) < n:
        raise typer.BadParameter(f"expected [SPEC] {names}; got {' '.join(args) or 'nothing'}")
    return spec, rest


def _lab(plan: Path | None, spec: Path | None = None) -> Lab:
    spec = spec_from(spec, ("--plan", plan))
    plan = None
    require("lab", "the lab")
    from clusterforge.lab.lab import Lab

    if os.geteuid() != 0:
        typer.echo("the lab needs root (netns, bridges, systemd-nspawn): run it with sudo", err=True)
        raise typer.Exit(2)
    source = plan or spec or DEFAULT_PLAN
    if source == DEFAULT_PLAN and not source.exists():
        typer.echo(
            f"no {DEFAULT_PLAN}: run `clusterforge plan inventory/clusters/lab.yaml` or name the SPEC",
            err=True,
        )
        raise typer.Exit(2)
    return Lab(source)


def _run(fn: object) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        fn()  # type: ignore[operator]
    except ClusterforgeError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(int(e.exit_code)) from e


@app.command()
def up(spec: SpecArg = None, plan: PlanOpt = None, timeout: float = 180.0) -> None:
    """Bring the whole lab up (infra + every node) and wait for SSH."""
    lab = _lab(plan, spec)
    _run(lambda: lab.up(timeout=timeout))
    typer.echo(
        f"lab {lab.cluster} up: {len(lab.plan.nodes)} nodes; ssh key {lab.ssh_key_path}, "
        f"known_hosts {lab.known_hosts_path}; SLURM_CONF={lab.slurm_conf_path}"
    )


@app.command()
def down(spec: SpecArg = None, plan: PlanOpt = None) -> None:
    """Stop every node and the infrastructure; leaves no process, netns, mount or bridge behind."""
    _run(_lab(plan, spec).down)


@app.command()
def purge() -> None:
    """Remove every lab trace from the host (any cluster), without needing a plan."""
    require("lab", "the lab")
    if os.geteuid() != 0:
        raise typer.Exit(2)
    from clusterforge.lab import cleanup

    found = cleanup.purge()
    typer.echo(json.dumps({k: v for k, v in found.items() if v}, indent=1) or "{}")


@app.command()
def status(
    spec: SpecArg = None,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    plan: PlanOpt = None,
    as_json: Annotated[bool, json_flag()] = False,
) -> None:
    """Nodes (state, boots, SSH, memory) and infrastructure."""
    st = _lab(plan, spec).status()
    if pick_format(fmt, as_json) == "json":
        emit(json.dumps(st, indent=1), output)
        return
    infra = st["infra"]
    typer.echo(
        f"cluster {st['cluster']}  bridge={'up' if infra['bridge'] else 'down'}  "
        f"slurmctld={infra['slurmctld'] or '-'}  munged={infra['munged'] or '-'}  "
        f"apt={infra['apt_repo'] or '-'}  apt-proxy={infra['apt_proxy'] or '-'}  "
        f"prometheus={infra['prometheus'] or '-'}  redis={infra['redis'] or '-'}  "
        f"bmcs={sum(1 for pid in infra['bmcs'].values() if pid)}/{len(infra['bmcs'])}"
    )
    for name, n in st["nodes"].items():
        typer.echo(
            f"  {name:<12} {n['state']:<10} {n['mgmt_ip']:<14} ssh={'yes' if n['ssh'] else 'no ':<3} "
            f"boots={n['boots']} pss={n['pss_mib']}MiB"
        )


@app.command()
def ssh(
    args: Annotated[list[str], typer.Argument(help="[SPEC] NODE [CMD...]", show_default=False)],
    plan: PlanOpt = None,
) -> None:
    """SSH into a node as root (strict host-key checking against the lab's known_hosts)."""
    spec, (node, *cmd) = _node_args(args, plan, "NODE", variadic=True)
    lab = _lab(None, spec)
    argv = lab.ssh_argv(node, *cmd)
    if not cmd:
        argv.insert(1, "-t")
    os.execvp(argv[0], argv)


@app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(ctx: typer.Context, plan: PlanOpt = None) -> None:
    """Run a command inside NODE through its namespaces (works with sshd stopped): lab exec [SPEC] NODE --
    CMD."""
    spec, (node, *cmd) = _node_args([a for a in ctx.args if a != "--"], plan, "NODE", variadic=True)
    lab = _lab(None, spec)
    argv = cmd or ["/bin/bash"]
    r = lab.exec(node, argv, input=None if sys.stdin.isatty() else sys.stdin.read(), timeout=3600)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    raise typer.Exit(r.returncode)


@app.command()
def reset(args: NodeArgs, plan: PlanOpt = None) -> None:
    """Return NODE to the pristine image (same name, addresses and host key)."""
    spec, (node, *_) = _node_args(args, plan, "NODE")
    _run(lambda: _lab(None, spec).reset(node))


@app.command()
def snapshot(args: NodeArgs, tag: str = "default", plan: PlanOpt = None) -> None:
    """Save NODE's overlay (e.g. after provisioning) for a fast `lab restore`."""
    spec, (node, *_) = _node_args(args, plan, "NODE")
    lab = _lab(None, spec)
    _run(lambda: typer.echo(lab.snapshot(node, tag)))


@app.command()
def restore(args: NodeArgs, tag: str = "default", plan: PlanOpt = None) -> None:
    """Put NODE back to a snapshot and boot it."""
    spec, (node, *_) = _node_args(args, plan, "NODE")
    _run(lambda: _lab(None, spec).restore(node, tag))


@app.command()
def fault(
    args: Annotated[list[str], typer.Argument(help="[SPEC] NODE KIND", show_default=False)],
    clear: bool = typer.Option(False, "--clear"),
    plan: PlanOpt = None,
) -> None:
    """Inject (or --clear) a simulated hardware fault in NODE (implemented by the simulator)."""
    spec, (node, kind, *_) = _node_args(args, plan, "NODE KIND")
    lab = _lab(None, spec)
    faults = importlib.import_module("clusterforge.lab.sim.faults")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        result = faults.apply(lab, node, kind, clear)
    except Exception as e:  # the simulator's own errors (unknown kind, node not running...)
        typer.echo(f"fault {kind} on {node}: {e}", err=True)
        raise typer.Exit(int(getattr(e, "exit_code", 1))) from e
    if result:
        typer.echo(json.dumps(result, indent=1, default=str))


@infra_app.command("up")
def infra_up(spec: SpecArg = None, plan: PlanOpt = None) -> None:
    """Image (cached), bridges, SSH keys, Slurm controller, apt repository server."""
    _run(_lab(plan, spec).infra_up)


@infra_app.command("down")
def infra_down(spec: SpecArg = None, plan: PlanOpt = None) -> None:
    """Stop the Slurm controller and repository server; remove bridges if no node is left."""
    _run(_lab(plan, spec).infra_down)


@node_app.command("up")
def node_up(args: NodeArgs, plan: PlanOpt = None, wait: bool = True, timeout: float = 60.0) -> None:
    """Boot one node (idempotent; cleans up the remains of a crashed one first)."""
    spec, (name, *_) = _node_args(args, plan, "NODE")
    _run(lambda: _lab(None, spec).node_up(name, wait=wait, timeout=timeout))


@node_app.command("down")
def node_down(args: NodeArgs, plan: PlanOpt = None) -> None:
    """Stop one node for good (its overlay is kept: `node up` boots it as it was)."""
    spec, (name, *_) = _node_args(args, plan, "NODE")
    _run(lambda: _lab(None, spec).node_down(name))
