"""`clusterforge lab ...`: a Typer sub-app (mount as `app.add_typer(lab_cli.app, name="lab")`)."""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from clusterforge.errors import ClusterforgeError
from clusterforge.lab import cleanup
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

PlanOpt = Annotated[
    Path | None, typer.Option("--plan", help="plan.json, or a spec YAML (planned on the fly)")
]
SpecArg = Annotated[Path | None, typer.Argument(help="spec YAML or plan.json (default: the lab plan)")]


def _lab(plan: Path | None, spec: Path | None = None) -> Lab:
    if os.geteuid() != 0:
        typer.echo("the lab needs root (netns, bridges, systemd-nspawn): run it with sudo", err=True)
        raise typer.Exit(2)
    source = plan or spec or DEFAULT_PLAN
    if source == DEFAULT_PLAN and not source.exists():
        typer.echo(
            f"no {DEFAULT_PLAN}: run `clusterforge plan inventory/clusters/lab.yaml` or pass --plan", err=True
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
    if os.geteuid() != 0:
        raise typer.Exit(2)
    found = cleanup.purge()
    typer.echo(json.dumps({k: v for k, v in found.items() if v}, indent=1) or "{}")


@app.command()
def status(spec: SpecArg = None, plan: PlanOpt = None, as_json: bool = typer.Option(False, "--json")) -> None:
    """Nodes (state, boots, SSH, memory) and infrastructure."""
    st = _lab(plan, spec).status()
    if as_json:
        typer.echo(json.dumps(st, indent=1))
        return
    infra = st["infra"]
    typer.echo(
        f"cluster {st['cluster']}  bridge={'up' if infra['bridge'] else 'down'}  "
        f"slurmctld={infra['slurmctld'] or '-'}  munged={infra['munged'] or '-'}  "
        f"apt={infra['apt_repo'] or '-'}  apt-proxy={infra['apt_proxy'] or '-'}  "
        f"bmcs={sum(1 for pid in infra['bmcs'].values() if pid)}/{len(infra['bmcs'])}"
    )
    for name, n in st["nodes"].items():
        typer.echo(
            f"  {name:<12} {n['state']:<10} {n['mgmt_ip']:<14} ssh={'yes' if n['ssh'] else 'no ':<3} "
            f"boots={n['boots']} pss={n['pss_mib']}MiB"
        )


@app.command()
def ssh(node: str, cmd: Annotated[list[str] | None, typer.Argument()] = None, plan: PlanOpt = None) -> None:
    """SSH into a node as root (strict host-key checking against the lab's known_hosts)."""
    lab = _lab(plan)
    argv = lab.ssh_argv(node, *(cmd or []))
    if not cmd:
        argv.insert(1, "-t")
    os.execvp(argv[0], argv)


@app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(ctx: typer.Context, node: str, plan: PlanOpt = None) -> None:
    """Run a command inside NODE through its namespaces (works with sshd stopped): lab exec NODE -- CMD."""
    lab = _lab(plan)
    argv = [a for a in ctx.args if a != "--"] or ["/bin/bash"]
    r = lab.exec(node, argv, input=None if sys.stdin.isatty() else sys.stdin.read(), timeout=3600)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    raise typer.Exit(r.returncode)


@app.command()
def reset(node: str, plan: PlanOpt = None) -> None:
    """Return NODE to the pristine image (same name, addresses and host key)."""
    _run(lambda: _lab(plan).reset(node))


@app.command()
def snapshot(node: str, tag: str = "default", plan: PlanOpt = None) -> None:
    """Save NODE's overlay (e.g. after provisioning) for a fast `lab restore`."""
    lab = _lab(plan)
    _run(lambda: typer.echo(lab.snapshot(node, tag)))


@app.command()
def restore(node: str, tag: str = "default", plan: PlanOpt = None) -> None:
    """Put NODE back to a snapshot and boot it."""
    _run(lambda: _lab(plan).restore(node, tag))


@app.command()
def fault(node: str, kind: str, clear: bool = typer.Option(False, "--clear"), plan: PlanOpt = None) -> None:
    """Inject (or --clear) a simulated hardware fault in NODE (implemented by the simulator)."""
    lab = _lab(plan)
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
def node_up(name: str, plan: PlanOpt = None, wait: bool = True, timeout: float = 60.0) -> None:
    """Boot one node (idempotent; cleans up the remains of a crashed one first)."""
    _run(lambda: _lab(plan).node_up(name, wait=wait, timeout=timeout))


@node_app.command("down")
def node_down(name: str, plan: PlanOpt = None) -> None:
    """Stop one node for good (its overlay is kept: `node up` boots it as it was)."""
    _run(lambda: _lab(plan).node_down(name))


def main() -> None:  # `python -m clusterforge.lab.cli` until the lead mounts the sub-app
    if shutil.which("systemd-nspawn") is None:
        typer.echo("systemd-nspawn missing: run scripts/install-system-deps.sh", err=True)
    try:
        app()
    except subprocess.CalledProcessError as e:
        typer.echo(f"command failed: {e}", err=True)
        raise SystemExit(1) from e


if __name__ == "__main__":
    main()
