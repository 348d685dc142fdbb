"""`clusterforge records merge`: the shards' records databases folded into one, from the command line;
every certificate verified first, one bad certificate rejects the merge."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.records import CheckResult, Store, signing
from clusterforge.records import certificate as cm
from clusterforge.records.shardcheck import ShardRejected


def _shard(path: Path, node: str, verdict: str) -> str:
    with Store(path) as s:
        rid = s.start_run("certify", "lab", tier="quick", nodes=[node])
        s.add_check_result(rid, CheckResult(node=node, check_id="gpu.ecc", status=verdict))
        s.add_node_result(rid, node, verdict, expectation_digest="d" * 64)
        s.finish_run(rid, "passed" if verdict == "pass" else "failed")
        return rid


@pytest.fixture
def shards(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for i, (node, verdict) in enumerate((("n1", "pass"), ("n2", "fail")), start=1):
        out[node] = tmp_path / f"shard-{i}.db"
        _shard(out[node], node, verdict)
    return out


def test_merge_brings_every_shard_into_one_database(tmp_path: Path, shards: dict[str, Path]) -> None:
    target = tmp_path / "all.db"
    res = CliRunner().invoke(app, ["records", "merge", *map(str, shards.values()), "--db", str(target)])
    assert res.exit_code == 0, res.output
    assert res.output.count("merged ") == 2
    with Store(target) as store:
        runs = store.runs()
        assert len(runs) == 2
        assert {r.status for r in runs} == {"passed", "failed"}
    again = CliRunner().invoke(
        app, ["records", "merge", *map(str, shards.values()), "--db", str(target), "--format", "json"]
    )
    assert again.exit_code == 0, again.output
    added = json.loads(again.output)["added"]
    assert all(not any(counts.values()) for counts in added.values())  # merging twice adds nothing


def test_merge_defaults_to_the_clusterforge_db(
    tmp_path: Path, shards: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "env.db"))
    res = CliRunner().invoke(app, ["records", "merge", str(shards["n1"])])
    assert res.exit_code == 0, res.output
    with Store(tmp_path / "env.db") as store:
        assert len(store.runs()) == 1


def test_a_bad_shard_list_merges_nothing(tmp_path: Path, shards: dict[str, Path]) -> None:
    target = tmp_path / "all.db"
    missing = tmp_path / "shard-3.db"
    res = CliRunner().invoke(app, ["records", "merge", str(shards["n1"]), str(missing), "--db", str(target)])
    assert res.exit_code == 2
    assert f"{missing}: no such records database" in res.output and "nothing merged" in res.output
    assert not target.exists()  # the good shard was not merged either
    itself = CliRunner().invoke(app, ["records", "merge", str(shards["n1"]), "--db", str(shards["n1"])])
    assert itself.exit_code == 2 and "is the database merged into" in itself.output


# --- certificates: every one verified before anything is merged ------------------------------------


def _signed_shard(path: Path, node: str, verdict: str, signer: signing.SigningKey | None = None) -> dict:
    """A shard whose run issued a signed certificate for `node`."""
    with Store(path) as s:
        rid = s.start_run("certify", "lab", tier="quick", nodes=[node])
        s.add_node_result(rid, node, verdict, expectation_digest="d" * 64)
        s.finish_run(rid, "passed" if verdict == "pass" else "failed")
        cert = cm.build(
            cluster="lab",
            node=node,
            expectation_digest="d" * 64,
            plan_hash=None,
            tier="quick",
            checks=[{"id": "gpu.ecc", "status": verdict, "expected": 0, "found": 0, "evidence": {}}],
            run_id=rid,
            signer=signer,
        )
        keys = {cert["kid"]: (signer or signing.signing_key()).public}
        s.record_certificate(cert, trusted=keys)
        return cert


def _plant(path: Path, cert: dict, **columns: object) -> None:
    """Write a certificate row straight into a shard (what a forger with the file can do)."""
    row = {
        "digest": cert.get("digest"),
        "cluster": cert.get("cluster"),
        "node": cert.get("node"),
        "tier": cert.get("tier"),
        "expectation_digest": cert.get("expectation_digest"),
        "verdict": cert.get("verdict"),
        "issued_at": cert.get("issued_at"),
        "valid_until": cert.get("valid_until"),
        "run_id": (cert.get("issuer") or {}).get("run_id"),
        "body": json.dumps(cert),
        "recorded_at": "2030-01-01T00:00:00.000000+00:00",
        **columns,
    }
    db = sqlite3.connect(path)
    with db:
        db.execute(
            f"INSERT OR REPLACE INTO certificates ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()),
        )
    db.close()


def _forged_pass(cert: dict) -> dict:
    forged = {**cert, "verdict": "pass", "checks": [{**c, "status": "pass"} for c in cert["checks"]]}
    forged["digest"] = cm.compute_digest(forged)
    return forged


def _merge(*args: str) -> Any:
    return CliRunner().invoke(app, ["records", "merge", *args])


def test_a_shard_with_one_forged_certificate_merges_nothing(tmp_path: Path) -> None:
    """Issue 16: a forged pass merged from a shard admitted a node that had failed."""
    good, bad = tmp_path / "shard-1.db", tmp_path / "shard-2.db"
    _signed_shard(good, "n1", "pass")
    failed = _signed_shard(bad, "n2", "fail")
    _plant(bad, _forged_pass(failed))  # the forged pass beside the real failure
    target = tmp_path / "all.db"
    res = _merge(str(good), str(bad), "--db", str(target))
    assert res.exit_code == 2, res.output
    assert "signature does not verify" in res.output and "nothing merged" in res.output
    assert str(bad) in res.output and "certificate n2/quick" in res.output
    if target.exists():
        with Store(target) as store:
            assert store.runs() == [] and store.certificates("n1", finished_only=False) == []
    with Store(target) as store, pytest.raises(ShardRejected) as exc:  # the library call refuses too
        store.merge_from(bad)
    assert exc.value.exit_code == 2 and "signature does not verify" in str(exc.value)
    with Store(target) as store:
        assert store.runs() == []
    assert _merge(str(good), "--db", str(target)).exit_code == 0  # the good shard alone merges


@pytest.mark.parametrize(
    "attack",
    ["unsigned", "v1", "foreign key", "column lies", "no run", "no node result", "not json"],
)
def test_every_kind_of_bad_certificate_rejects_the_shard(tmp_path: Path, attack: str) -> None:
    shard = tmp_path / "shard.db"
    cert = _signed_shard(shard, "n1", "fail")
    if attack == "unsigned":
        _plant(shard, {k: v for k, v in _forged_pass(cert).items() if k != "signature"})
    elif attack == "v1":
        v1 = {**{k: v for k, v in cert.items() if k not in ("signature", "kid")}, "hmac": "0" * 64}
        v1["schema"] = "clusterforge.certificate/v1"
        _plant(shard, v1, digest="1" * 64)
    elif attack == "foreign key":
        _signed_shard(shard, "n2", "pass", signer=_foreign_key())
    elif attack == "column lies":  # the real failure filed under another node: n1 would lose it
        _plant(shard, cert, node="n9")
    elif attack == "no run":
        other = cm.build(
            cluster="lab",
            node="n3",
            expectation_digest="d" * 64,
            plan_hash=None,
            tier="quick",
            checks=[{"id": "gpu.ecc", "status": "pass", "expected": 0, "found": 0, "evidence": {}}],
            run_id="run-nowhere",
        )
        _plant(shard, other)
    elif attack == "no node result":
        _plant(shard, cm.seal({**cert, "node": "n4"}))
    else:
        _plant(shard, cert, digest="2" * 64, body="{not json")
    res = _merge(str(shard), "--db", str(tmp_path / "all.db"))
    assert res.exit_code == 2 and "nothing merged" in res.output, res.output
    with Store(tmp_path / "all.db") as store:
        assert store.runs() == []


def test_another_controllers_certificates_merge_once_its_key_is_trusted(tmp_path: Path) -> None:
    other = _foreign_key()
    shard = tmp_path / "shard.db"
    cert = _signed_shard(shard, "n1", "pass", signer=other)
    target = tmp_path / "all.db"
    res = _merge(str(shard), "--db", str(target))
    assert res.exit_code == 2 and "unknown or untrusted key" in res.output and "trust-key" in res.output
    pem = tmp_path / "other.pub"
    pem.write_text(signing.public_pem(other.public))
    res = CliRunner().invoke(app, ["certificate", "trust-key", str(pem)])
    assert res.exit_code == 0 and other.kid in res.output
    res = _merge(str(shard), "--db", str(target))
    assert res.exit_code == 0, res.output
    with Store(target) as store:
        assert store.certificates("n1") == [cert]


def test_an_expired_certificate_still_merges(tmp_path: Path) -> None:
    """Merging moves records; an expired certificate is a true record (admission refuses it, not merge)."""
    shard = tmp_path / "shard.db"
    with Store(shard) as s:
        rid = s.start_run("certify", "lab", tier="quick", nodes=["n1"])
        s.add_node_result(rid, "n1", "pass", expectation_digest="d" * 64)
        s.finish_run(rid, "passed")
        old = cm.build(
            cluster="lab",
            node="n1",
            expectation_digest="d" * 64,
            plan_hash=None,
            tier="quick",
            checks=[{"id": "gpu.ecc", "status": "pass", "expected": 0, "found": 0, "evidence": {}}],
            run_id=rid,
            issued_at=datetime(2020, 1, 1, tzinfo=UTC),
            validity_hours=1,
        )
        s.record_certificate(old)
    assert _merge(str(shard), "--db", str(tmp_path / "all.db")).exit_code == 0


def _foreign_key() -> signing.SigningKey:
    private = Ed25519PrivateKey.generate()
    return signing.SigningKey(signing.kid_of(private.public_key()), private, Path("/elsewhere"))
