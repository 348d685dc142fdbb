"""`clusterforge collections install`: the third-party Ansible collections the roles use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("install")
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
