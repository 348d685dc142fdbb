"""Environment of child processes (ansible-playbook, validators, burn-in launchers): no signing secrets.

The certificate signing key, and the path of its file, stay in this process: `scrub_environ()` takes them
out of `os.environ` (so that every child, whoever builds its environment, inherits none) and remembers
them for this process; `child_env()` is the environment to give a child explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: variables that name or hold certificate signing material; any variable starting with one is stripped
SECRET_PREFIXES = ("CLUSTERFORGE_CERT_KEY",)

_captured: dict[str, str] = {}


def is_secret(name: str) -> bool:
    return name.startswith(SECRET_PREFIXES)


def scrub_environ() -> None:
    """Move every secret variable out of `os.environ` into this process's memory (idempotent)."""
    for name in [n for n in os.environ if is_secret(n)]:
        _captured[name] = os.environ.pop(name)


def env_value(name: str) -> str | None:
    """A secret variable's value: from the environment, else as captured by `scrub_environ`."""
    value = os.environ.get(name)
    return value if value is not None else _captured.get(name)


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus `extra`, without any secret variable."""
    return {k: v for k, v in {**os.environ, **(extra or {})}.items() if not is_secret(k)}
