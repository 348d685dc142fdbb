"""`clusterforge records merge`: fold the records databases of sharded runs into one (mounted by the CLI).

Controllers that certify or drift-check their own shard (`--shard i/n`) each write a records database; this
brings them into one, so that certificates, results and pool events of the whole cluster sit side by side.
Each merge is one transaction and keyed by run UUIDs, certificate digests and event UUIDs: merging a file
twice adds nothing twice. Every certificate of every shard is verified before anything is merged (signed
by a trusted key, unchanged, its run in the shard: `records.shardcheck`); one that is not rejects the merge.

Exit codes: 0 merged; 2 bad input (a file missing, the target itself, a certificate that does not verify),
nothing merged; 1 a database could not be read or written.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli import runs as runs_cli
from clusterforge.cli.options import OutputOpt, emit, format_option, json_flag, pick_format
from clusterforge.errors import ExitCode

app = typer.Typer(
    help="Records databases: list and show runs; merge the shards' databases into one.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _records() -> None:
    """Records databases: list and show runs; merge the shards' databases into one."""


app.command("runs")(runs_cli.runs)
app.command("show")(runs_cli.show)


@app.command()
def merge(
    shards: Annotated[list[Path], typer.Argument(help="records databases of the shards (e.g. shard-2.db)")],
    db: Annotated[
        Path | None,
        typer.Option(
            help="database merged into (default: $CLUSTERFORGE_DB or ~/.local/state/clusterforge/records.db)"
        ),
    ] = None,
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    as_json: Annotated[bool, json_flag()] = False,
) -> None:
    """Merge SHARDS into the records database (every file, and every certificate in it, checked before any
    is merged)."""
    from clusterforge.records import signing
    from clusterforge.records._util import default_db_path
    from clusterforge.records.shardcheck import check_shard
    from clusterforge.records.store import Store

    as_json = pick_format(fmt, as_json) == "json"
    target = (db or default_db_path()).expanduser()
    problems = []
    for s in shards:
        path = s.expanduser()
        if not path.is_file():
            problems.append(f"{s}: no such records database (give the path of a shard's records.db)")
        elif target.exists() and path.resolve() == target.resolve():
            problems.append(f"{s}: is the database merged into (pick another --db, or leave this file out)")
    if not problems:
        trusted = signing.trusted_keys()
        for s in shards:
            bad = check_shard(s.expanduser(), trusted)
            problems += [f"{s}: {p}" for p in bad[:20]]
            if len(bad) > 20:
                problems.append(f"{s}: ... and {len(bad) - 20} more certificates that do not verify")
            if bad:
                problems.append(
                    f"{s}: rejected; a certificate signed elsewhere needs that key's public half trusted "
                    "here (clusterforge certificate trust-key FILE); a forged one must not be merged"
                )
    if problems:
        for p in problems:
            typer.echo(f"error: {p}", err=True)
        typer.echo("nothing merged", err=True)
        raise typer.Exit(ExitCode.BAD_INPUT)
    added: dict[str, dict[str, int]] = {}
    lines = []
    with Store(target) as store:
        for s in shards:
            added[str(s)] = dataclasses.asdict(store.merge_from(s, trusted=trusted))
            counts = ", ".join(f"{k} {v}" for k, v in added[str(s)].items() if v)
            lines.append(f"merged {s} into {target}: {counts or 'nothing new'}")
    emit(
        json.dumps({"db": str(target), "added": added}, sort_keys=True) if as_json else "\n".join(lines),
        output,
    )
