"""What `records merge` checks in a shard's database before anything of it is merged.

Every certificate row must verify (`certificate.verify_seal`: signed by a trusted key, unchanged; an
expired certificate is still a true record), its columns must say what its signed body says (the store
selects by columns), and the run that issued it must be in the shard with a result for the node.
One failure rejects the whole shard.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from clusterforge.errors import ExitCode
from clusterforge.records import certificate as certmod
from clusterforge.records import signing
from clusterforge.records.model import RecordsError

#: certificates columns that repeat a field of the body
_COLUMNS = ("digest", "cluster", "node", "tier", "expectation_digest", "verdict", "issued_at", "valid_until")


class ShardRejected(RecordsError):
    """A shard holds a certificate that does not verify, or one without its run: nothing was merged."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, shard: str, problems: list[str]) -> None:
        self.shard = shard
        self.problems = problems
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__(f"{shard}: rejected, nothing merged:\n" + "\n".join(f"  - {p}" for p in shown))


def shard_problems(
    db: sqlite3.Connection, schema: str = "main", trusted: signing.TrustedKeys | None = None
) -> list[str]:
    """Problems of the certificates in database `schema` of `db` (an attached shard, or `main`)."""
    if schema not in ("main", "other"):
        raise ValueError(f"schema must be main or other; got {schema!r}")
    keys = signing.trusted_keys() if trusted is None else trusted
    problems = []
    rows = db.execute(f"SELECT {', '.join(_COLUMNS)}, run_id, body FROM {schema}.certificates").fetchall()
    for row in rows:
        label = f"certificate {row[2]}/{row[3]} {str(row[0])[:12]}"
        try:
            body = json.loads(row[-1])
        except (TypeError, ValueError):
            problems.append(f"{label}: its body is not JSON")
            continue
        res = certmod.verify_seal(body, keys)
        if not res.ok:
            problems.append(f"{label}: " + "; ".join(res.reasons))
            continue
        issuer = body.get("issuer") or {}
        said = [*(body.get(c) for c in _COLUMNS), issuer.get("run_id")]
        wrong = [
            c for c, have, want in zip((*_COLUMNS, "run_id"), row[:-1], said, strict=True) if have != want
        ]
        if wrong:
            problems.append(f"{label}: columns {', '.join(wrong)} differ from the signed certificate")
            continue
        run_id = issuer.get("run_id")
        run = db.execute(f"SELECT status FROM {schema}.runs WHERE id = ?", (run_id,)).fetchone()
        if run is None:
            problems.append(f"{label}: its run {run_id} is not in the shard")
        elif not db.execute(
            f"SELECT 1 FROM {schema}.node_results WHERE run_id = ? AND node = ?", (run_id, body["node"])
        ).fetchone():
            problems.append(f"{label}: its run {run_id} has no result for {body['node']}")
    return problems


def check_shard(path: Path, trusted: signing.TrustedKeys | None = None) -> list[str]:
    """`shard_problems` of the records database at `path` (brought to this schema version first)."""
    from clusterforge.records.db import connect, migrate

    db = connect(path)
    try:
        migrate(db)
        return shard_problems(db, "main", trusted)
    finally:
        db.close()
