"""`clusterforge certificate ...`: verify and list node certificates, manage the signing key (mounted by
the root CLI).

Exit codes of `verify`: 0 valid; 3 invalid, unsigned, signed by an untrusted key, or expired; 2 unreadable
input or key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from clusterforge.cli.options import OutputOpt, emit, format_option, json_flag, pick_format
from clusterforge.errors import ExitCode
from clusterforge.records import certificate as certmod

app = typer.Typer(
    help="Node certificates: verify and list; the signing key: show, rotate, trust.",
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
    fmt: Annotated[str, format_option("text", "json")] = "text",
    output: OutputOpt = None,
    as_json: Annotated[bool, json_flag()] = False,
) -> None:
    """Verify FILE: signed by a trusted key, unchanged, consistent, within its validity period.

    Exit 0 valid; 3 invalid, unsigned, untrusted key or expired; 2 unreadable.
    """
    fmt = pick_format(fmt, as_json)
    try:
        cert = certmod.load(file)
    except certmod.CertificateUnreadable as exc:
        if fmt == "json":
            emit(json.dumps({"file": str(file), "ok": False, "reasons": [str(exc)]}), output)
        else:
            typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
    result = certmod.verify(cert)
    if fmt == "json":
        doc = {
            "file": str(file),
            "ok": result.ok,
            "reasons": result.reasons,
            "node": cert.get("node"),
            "tier": cert.get("tier"),
            "verdict": cert.get("verdict"),
            "valid_until": cert.get("valid_until"),
        }
        emit(json.dumps(doc, sort_keys=True), output)
    elif result.ok:
        emit(
            f"valid: {cert['node']} {cert['tier']} {cert['verdict']} until {cert['valid_until']} "
            f"(expectation {cert['expectation_digest'][:12]})",
            output,
        )
    else:
        typer.echo(f"INVALID: {file}", err=True)
        for reason in result.reasons:
            typer.echo(f"  - {reason}", err=True)
        if output is not None:
            emit("\n".join([f"INVALID: {file}", *(f"  - {r}" for r in result.reasons)]), output)
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
    from clusterforge.records import signing
    from clusterforge.records.store import Store

    with Store(db) as store:
        certs = store.certificates(node, tier)
    if not certs:
        typer.echo(f"no certificates recorded for {node}")
        return
    trusted = signing.trusted_keys()
    for c in certs:
        res = certmod.verify(c, trusted)
        state = "valid" if res.ok else "invalid: " + "; ".join(res.reasons)
        typer.echo(
            f"{c['issued_at']}  {c['tier']:<6} {c['verdict']:<5} {c['expectation_digest'][:12]}  {state}"
        )


@app.command("public-key")
def public_key() -> None:
    """Print the signing key's ID and public half (PEM), making the key on first use.

    Give the PEM to other controllers (`certificate trust-key`) whose `records merge` takes this one's
    certificates. The private key never leaves its file.
    """
    from clusterforge.records import signing

    key = signing.signing_key()
    typer.echo(f"kid {key.kid}  ({key.path})")
    typer.echo(signing.public_pem(key.public), nl=False)


@app.command("rotate-key")
def rotate_key() -> None:
    """Make a new signing key; the old one is kept as a trusted public key (verify only).

    Certificates it signed keep verifying until its file in `keys/trusted/` is deleted.
    """
    from clusterforge.records import signing

    old, new = signing.rotate()
    typer.echo(f"signing key {new.kid}" + (f"; {old} retired to verify-only" if old else " (there was none)"))


@app.command("trust-key")
def trust_key(
    file: Annotated[
        Path, typer.Argument(help="an Ed25519 public key in PEM (from `certificate public-key`)")
    ],
) -> None:
    """Trust FILE's public key for verification (e.g. another controller's, for `records merge`)."""
    from clusterforge.records import signing

    public = signing.load_public(file)
    dest = signing.trust(public)
    typer.echo(f"trusted {signing.kid_of(public)} ({dest})")


@app.command("keys")
def keys() -> None:
    """List the trusted key IDs: the signing key's and those in `keys/trusted/` (none is made)."""
    from clusterforge.records import signing

    problems: list[str] = []
    trusted = signing.trusted_keys(problems)
    current = signing.key_path()
    signer = signing.load_private(current).kid if current.exists() else None
    for kid in sorted(trusted):
        typer.echo(f"{kid}  {'signing' if kid == signer else 'verify only'}")
    if not trusted:
        typer.echo(f"no trusted keys (the signing key is made on first certification: {current})")
    for p in problems:
        typer.echo(f"warning: {p}", err=True)
