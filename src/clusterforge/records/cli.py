"""`clusterforge certificate ...`: verify and list node certificates (mounted by the root CLI).

Exit codes of `verify`: 0 valid; 3 invalid or expired; 2 unreadable input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from clusterforge.errors import ExitCode
from clusterforge.records import certificate as certmod

app = typer.Typer(
    help="Node certificates: verify and list.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _certificate() -> None:
    """Node certificates: verify and list."""


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="certificate JSON")],
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Verify FILE: shape, digest, HMAC (when CLUSTERFORGE_CERT_KEY is set) and validity period.

    Exit 0 valid; 3 invalid or expired; 2 unreadable.
    """
    try:
        cert = certmod.load(file)
    except certmod.CertificateUnreadable as exc:
        if as_json:
            typer.echo(json.dumps({"file": str(file), "ok": False, "reasons": [str(exc)]}))
        else:
            typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
    result = certmod.verify(cert)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "file": str(file),
                    "ok": result.ok,
                    "reasons": result.reasons,
                    "node": cert.get("node"),
                    "tier": cert.get("tier"),
                    "verdict": cert.get("verdict"),
                    "valid_until": cert.get("valid_until"),
                },
                sort_keys=True,
            )
        )
    elif result.ok:
        typer.echo(
            f"valid: {cert['node']} {cert['tier']} {cert['verdict']} until {cert['valid_until']} "
            f"(expectation {cert['expectation_digest'][:12]})"
        )
    else:
        typer.echo(f"INVALID: {file}", err=True)
        for reason in result.reasons:
            typer.echo(f"  - {reason}", err=True)
    raise typer.Exit(ExitCode.OK if result.ok else ExitCode.NOT_AS_DECLARED)


@app.command("list")
def list_(
    node: Annotated[str, typer.Argument(help="node name")],
    tier: Annotated[str | None, typer.Option(help="quick | full | burnin")] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            help="records database (default: $CLUSTERFORGE_DB or ~/.local/state/clusterforge/records.db)"
        ),
    ] = None,
) -> None:
    """List the certificates recorded for NODE, newest first, each with its verification."""
    from clusterforge.records.store import Store

    with Store(db) as store:
        certs = store.certificates(node, tier)
    if not certs:
        typer.echo(f"no certificates recorded for {node}")
        return
    for c in certs:
        res = certmod.verify(c)
        state = "valid" if res.ok else "invalid: " + "; ".join(res.reasons)
        typer.echo(
            f"{c['issued_at']}  {c['tier']:<6} {c['verdict']:<5} {c['expectation_digest'][:12]}  {state}"
        )
