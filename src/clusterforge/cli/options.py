"""The option convention every command follows, in one place.

- The cluster is the first positional argument, SPEC (a spec YAML; commands that can also read a plan say so),
  with `$CLUSTERFORGE_SPEC` as its default. Commands that also take node names (`pool status SPEC NODE...`,
  `lab ssh SPEC NODE`) tell the two apart by the file suffix: `.yaml`, `.yml` or `.json` is the spec.
- `--format` picks the report's form from the formats the command declares (text, json, markdown, junit;
  `report burnin` adds html); any other value is a usage error (exit 2) before anything runs.
- `--output FILE` writes that report to FILE instead of stdout; stdout then keeps the text for people.
  When a machine format goes to stdout, the lines for people (progress, tables) go to stderr instead.
- Old spellings (`--json`, `--junit FILE`, `--plan`, `--spec`) still work for one release, hidden, each
  printing a one-line deprecation to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console

from clusterforge import term

FORMATS = ("text", "json", "markdown", "junit")
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
REMOVED_IN = "the next release"

SpecArg = Annotated[
    Path,
    typer.Argument(help="cluster spec (YAML); default: $CLUSTERFORGE_SPEC", envvar="CLUSTERFORGE_SPEC"),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="write the report (in --format) to FILE instead of stdout"),
]


def format_option(*allowed: str) -> Any:
    """`--format` limited to `allowed` (checked while parsing: a bad value is exit 2, nothing run)."""

    def check(value: str) -> str:
        if value not in allowed:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)} for this command")
        return value

    return typer.Option("--format", "-f", help=" | ".join(allowed), callback=check)


def warn_deprecated(old: str, new: str) -> None:
    """The one-line deprecation printed to stderr when an old spelling is used."""
    typer.echo(f"clusterforge: {old} is deprecated and goes in {REMOVED_IN}; use {new}", err=True)


def deprecated_option(old: str, new: str, **kwargs: Any) -> Any:
    """A hidden option kept for one release under its old name; using it prints the deprecation."""

    def note(value: Any) -> Any:
        if value:
            warn_deprecated(old, new)
        return value

    return typer.Option(old, hidden=True, callback=note, help=f"deprecated: use {new}", **kwargs)


def json_flag() -> Any:
    """The old `--json` flag (= `--format json`)."""
    return deprecated_option("--json", "--format json")


def pick_format(fmt: str, as_json: bool) -> str:
    return "json" if as_json else fmt


def human_console(fmt: str, output: Path | None) -> Console:
    """Where the lines for people go: stdout, unless a machine format is written to stdout."""
    return term.console(stderr=fmt != "text" and output is None)


def file_console(fh: TextIO) -> Console:
    """A console writing plain, unwrapped text to an open file (a text report sent to --output)."""
    return Console(file=fh, width=term.PLAIN_WIDTH, no_color=True, highlight=False, emoji=False)


def emit(text: str, output: Path | None) -> None:
    """The report: to FILE when --output is given (and the path printed on stderr), else to stdout."""
    if output is None:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stdout.flush()
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")


def is_spec(arg: str) -> bool:
    return arg.lower().endswith(SPEC_SUFFIXES)


def split_spec(args: Sequence[str], default: Path | None) -> tuple[Path | None, list[str]]:
    """`[SPEC] NAME...` → (spec, names): the first argument is the spec when it ends in .yaml/.yml/.json."""
    if args and is_spec(args[0]):
        return Path(args[0]), list(args[1:])
    return default, list(args)


def spec_from(spec: Path | None, *old: tuple[str, Path | None]) -> Path | None:
    """The spec from the positional, else from a deprecated option (`("--plan", value)`), warning."""
    for name, value in old:
        if value is not None:
            if spec is None:
                return value
            raise typer.BadParameter(f"give the spec once: positional SPEC or {name}, not both")
    return spec
