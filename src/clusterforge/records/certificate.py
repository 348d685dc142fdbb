"""Node certificates: JSON bound to a node's expectation digest, signed with Ed25519.

The body is every field but `digest` and `signature`, `kid` (the signing key's ID) included. `signature`
is the Ed25519 signature (base64) of the canonical JSON of the body (sorted keys, no whitespace, UTF-8);
`digest` is the SHA-256 of the same bytes: the certificate's name in the records database, not a seal
(anyone can recompute it). `verify` accepts a certificate only when it is signed by a trusted key
(`records.signing`): unsigned, unknown key, or any changed byte is refused.
"""

from __future__ import annotations

import hashlib
import hmac as _hmac
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.records import signing
from clusterforge.records._util import PRIVATE_FILE, hostname, private_dir, state_dir, utcnow, who

SCHEMA = "clusterforge.certificate/v2"
UNSIGNED_SCHEMAS = ("clusterforge.certificate/v1",)  # digest (and optional HMAC) only: never accepted
KEY_ENV = signing.LEGACY_KEY_ENV  # no longer read: set, signing and verifying stop with a migration error
DIR_ENV = "CLUSTERFORGE_CERT_DIR"
TIERS = ("quick", "full", "burnin")
VERDICTS = ("pass", "fail", "error")
SEALS = ("digest", "signature")
CLOCK_SKEW = timedelta(minutes=5)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_KID = re.compile(r"^[0-9a-f]{32}$")
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema": str,
    "cluster": str,
    "node": str,
    "expectation_digest": str,
    "plan_hash": (str, type(None)),
    "tier": str,
    "checks": list,
    "verdict": str,
    "tool_versions": dict,
    "serials": dict,
    "issued_at": str,
    "valid_until": str,
    "issuer": dict,
    "kid": str,
}


class CertificateUnreadable(ClusterforgeError):
    """The file is missing, not JSON, or not an object."""

    exit_code = ExitCode.BAD_INPUT


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    reasons: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.ok


def canonical_json(obj: Any) -> bytes:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def body_of(cert: Mapping[str, Any]) -> dict[str, Any]:
    """Every field but the seals (`kid` is part of the body: it is signed)."""
    return {k: v for k, v in cert.items() if k not in SEALS}


def compute_digest(cert: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(body_of(cert))).hexdigest()


def ts(dt: datetime) -> str:
    """Certificate timestamps: ISO 8601 UTC to the second, `Z` suffix."""
    return dt.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"timestamp without time zone: {text!r}")
    return dt.astimezone(UTC)


def verdict_of(checks: Sequence[Mapping[str, Any]]) -> str:
    """`fail` if any check failed (the node is wrong), else `error` if any could not run, else `pass`.

    No checks at all is `error`: nothing was shown about the node.
    """
    statuses = {c.get("status") for c in checks}
    if not checks:
        return "error"
    if "fail" in statuses:
        return "fail"
    return "error" if statuses - {"pass"} else "pass"


def build(
    *,
    cluster: str,
    node: str,
    expectation_digest: str,
    plan_hash: str | None,
    tier: str,
    checks: Sequence[Mapping[str, Any]],
    tool_versions: Mapping[str, str] | None = None,
    gpu_serials: Sequence[Mapping[str, Any]] = (),
    nic_serials: Sequence[Mapping[str, Any]] = (),
    validity_hours: float = 720,
    issued_at: datetime | None = None,
    run_id: str | None = None,
    signer: signing.SigningKey | None = None,
) -> dict[str, Any]:
    """A signed certificate (`signer`: default, the records directory's key, made on first use).

    Each check: `{id, status, expected, found, evidence}` (more keys allowed).

    Serials: `[{"index": 0, "serial": "..."}]` per GPU and per NIC. The verdict is derived from the checks.
    """
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}; got {tier!r}")
    issued = issued_at or utcnow()
    cert: dict[str, Any] = {
        "schema": SCHEMA,
        "cluster": cluster,
        "node": node,
        "expectation_digest": expectation_digest,
        "plan_hash": plan_hash,
        "tier": tier,
        "checks": [dict(c) for c in checks],
        "verdict": verdict_of(checks),
        "tool_versions": dict(tool_versions or {}),
        "serials": {"gpu": [dict(s) for s in gpu_serials], "nic": [dict(s) for s in nic_serials]},
        "issued_at": ts(issued),
        "valid_until": ts(issued + timedelta(hours=validity_hours)),
        "issuer": {"who": who(), "host": hostname(), "run_id": run_id},
    }
    return seal(cert, signer)


def seal(cert: Mapping[str, Any], signer: signing.SigningKey | None = None) -> dict[str, Any]:
    """Set `kid`, then add `digest` and `signature` over the body."""
    key = signer or signing.signing_key()
    out = body_of(cert)
    out["kid"] = key.kid
    body = canonical_json(out)
    out["digest"] = hashlib.sha256(body).hexdigest()
    out["signature"] = key.sign(body)
    return out


def _shape(cert: Mapping[str, Any]) -> list[str]:
    reasons = []
    for name, typ in _REQUIRED.items():
        if name not in cert:
            reasons.append(f"missing field {name!r}")
        elif not isinstance(cert[name], typ) or isinstance(cert[name], bool):
            reasons.append(f"field {name!r} has the wrong type ({type(cert[name]).__name__})")
    if reasons:
        return reasons
    if cert["schema"] != SCHEMA:
        reasons.append(f"unknown schema {cert['schema']!r} (expected {SCHEMA!r})")
    if not cert["node"]:
        reasons.append("empty node name")
    if not _HEX64.match(cert["expectation_digest"]):
        reasons.append("expectation_digest is not a SHA-256 hex digest")
    if cert["tier"] not in TIERS:
        reasons.append(f"unknown tier {cert['tier']!r}")
    if cert["verdict"] not in VERDICTS:
        reasons.append(f"unknown verdict {cert['verdict']!r}")
    checks = cert["checks"]
    for i, c in enumerate(checks):
        if not isinstance(c, dict) or not {"id", "status", "expected", "found", "evidence"} <= c.keys():
            reasons.append(f"checks[{i}] lacks id/status/expected/found/evidence")
        elif c["status"] not in VERDICTS:
            reasons.append(f"checks[{i}] ({c['id']}) has unknown status {c['status']!r}")
    if not reasons and cert["verdict"] != verdict_of(checks):
        reasons.append(
            f"verdict {cert['verdict']!r} does not follow from the checks ({verdict_of(checks)!r})"
        )
    for kind in ("gpu", "nic"):
        if not isinstance(cert["serials"].get(kind), list):
            reasons.append(f"serials.{kind} is not a list")
    return reasons


def _signature(cert: Mapping[str, Any], trusted: signing.TrustedKeys) -> list[str]:
    signature, kid = cert.get("signature"), cert.get("kid")
    if signature is None:
        return ["unsigned: no signature (re-certify)"]
    if not isinstance(signature, str) or not isinstance(kid, str) or not _KID.match(kid):
        return ["malformed signature or kid"]
    public = trusted.get(kid)
    if public is None:
        return [f"signed by an unknown or untrusted key (kid {kid})"]
    try:
        body = canonical_json(body_of(cert))
    except (TypeError, ValueError) as exc:
        return [f"cannot serialize the certificate: {exc}"]
    if not signing.check_signature(public, signature, body):
        return [f"signature does not verify with key {kid}: the certificate was changed after it was signed"]
    return []


def verify_seal(cert: Mapping[str, Any], trusted: signing.TrustedKeys | None = None) -> VerifyResult:
    """Shape, signature by a trusted key (default: `signing.trusted_keys()`) and digest; not the validity
    period (`records merge` checks this: an expired certificate is still a true record)."""
    if not isinstance(cert, Mapping):
        return VerifyResult(False, ["not a JSON object"])
    if cert.get("schema") in UNSIGNED_SCHEMAS:
        return VerifyResult(
            False, [f"unsigned (schema {str(cert['schema']).rsplit('/', 1)[-1]}): re-certify"]
        )
    reasons = _shape(cert)
    reasons += _signature(cert, signing.trusted_keys() if trusted is None else trusted)
    digest = cert.get("digest")
    if not isinstance(digest, str):
        reasons.append("missing digest")
    else:
        try:
            if not _hmac.compare_digest(digest, compute_digest(cert)):
                reasons.append("digest mismatch: the certificate was changed after it was issued")
        except (TypeError, ValueError) as exc:
            reasons.append(f"cannot compute the digest: {exc}")
    return VerifyResult(not reasons, reasons)


def verify(
    cert: Mapping[str, Any], trusted: signing.TrustedKeys | None = None, now: datetime | None = None
) -> VerifyResult:
    """`verify_seal`, and the validity period: refused when expired or issued in the future."""
    seal_result = verify_seal(cert, trusted)
    if not isinstance(cert, Mapping) or cert.get("schema") in UNSIGNED_SCHEMAS:
        return seal_result
    reasons = list(seal_result.reasons)
    now = now or utcnow()
    try:
        issued, until = parse_ts(str(cert.get("issued_at"))), parse_ts(str(cert.get("valid_until")))
    except ValueError:
        reasons.append("issued_at/valid_until are not ISO 8601 timestamps with a time zone")
    else:
        if until <= issued:
            reasons.append("valid_until is not after issued_at")
        if issued > now + CLOCK_SKEW:
            reasons.append(f"issued in the future ({cert.get('issued_at')})")
        if now >= until:
            reasons.append(f"expired at {cert.get('valid_until')}")
    return VerifyResult(not reasons, reasons)


def default_dir() -> Path:
    env = os.environ.get(DIR_ENV)
    return Path(env).expanduser() if env else state_dir() / "certificates"


def path_for(cert: Mapping[str, Any], root: Path | None = None) -> Path:
    safe = re.compile(r"[^A-Za-z0-9._-]")
    cluster = safe.sub("_", str(cert.get("cluster") or "default"))
    return (
        (root or default_dir())
        / cluster
        / f"{safe.sub('_', str(cert['node']))}-{safe.sub('_', str(cert['tier']))}.json"
    )


def write(cert: Mapping[str, Any], root: Path | None = None) -> Path:
    """Write atomically (temp file, fsync, rename, fsync of the folder).

    The file is `<root>/<cluster>/<node>-<tier>.json`.
    """
    dest = path_for(cert, root)
    private_dir(dest.parent.parent)  # the certificates folder: tightened when it is the default one
    private_dir(dest.parent, tighten=True)  # <cluster>/: clusterforge's own
    atomic_write_text(dest, json.dumps(cert, indent=2, sort_keys=True) + "\n")
    return dest


def atomic_write_text(dest: Path, text: str, mode: int = PRIVATE_FILE) -> None:
    """Replace `dest` atomically with a new file of `mode` (exactly: the umask does not apply)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    dfd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CertificateUnreadable(f"{path}: cannot read a certificate: {exc}") from exc
    if not isinstance(data, dict):
        raise CertificateUnreadable(f"{path}: a certificate is a JSON object; found {type(data).__name__}")
    return data
