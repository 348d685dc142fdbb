"""`--extra-vars` / `-e` for provision and drift, as Ansible reads them: `KEY=VALUE` (a string), a JSON or
YAML mapping, or `@FILE` (a YAML/JSON mapping). Later ones win. Bad input is exit 2, naming the argument."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import InputError, Problem

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_FILE = 1 << 20


def _bad(arg: str, expected: str, found: str, fix: str) -> InputError:
    return InputError([Problem("--extra-vars", arg[:80], expected, found, fix)], "bad --extra-vars")


def _mapping(arg: str, text: str, where: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _bad(
            arg, "a YAML/JSON mapping", f"not YAML ({where}: {str(exc)[:120]})", "fix the syntax"
        ) from exc
    if not isinstance(data, dict) or not all(isinstance(k, str) and _KEY.match(k) for k in data):
        raise _bad(arg, "a mapping of variable names", type(data).__name__, "give KEY: VALUE pairs")
    return data


def parse(args: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for arg in args:
        if arg.startswith("@"):
            path = Path(arg[1:])
            if not path.is_file():
                raise _bad(arg, "a readable file", "no such file", "give the path after @")
            if path.stat().st_size > MAX_FILE:
                raise _bad(arg, f"a file under {MAX_FILE} bytes", f"{path.stat().st_size} bytes", "split it")
            out.update(_mapping(arg, path.read_text(encoding="utf-8"), str(path)))
        elif arg.lstrip().startswith("{"):
            out.update(_mapping(arg, arg, "the argument"))
        else:
            for pair in arg.split():
                key, eq, value = pair.partition("=")
                if not eq or not _KEY.match(key):
                    raise _bad(
                        arg, "KEY=VALUE, a mapping or @FILE", repr(pair[:40]), "e.g. -e nccl_debug=INFO"
                    )
                out[key] = value
    return out
