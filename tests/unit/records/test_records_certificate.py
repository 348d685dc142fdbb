"""Certificates: format, Ed25519 signature over every field (nested ones too), tampering of each field,
unsigned and untrusted certificates refused, expiry, files (0600 in 0700 folders), store, CLI."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from clusterforge.cli.certificate import app
from clusterforge.records import CheckResult, RecordsError, Store, signing
from clusterforge.records import certificate as cm

NOW = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)


def other_key() -> signing.SigningKey:
    """A valid Ed25519 key that this records directory does not trust."""
    private = Ed25519PrivateKey.generate()
    return signing.SigningKey(signing.kid_of(private.public_key()), private, Path("/nowhere"))


def make(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(
        cluster="lab",
        node="ib-01",
        expectation_digest="e" * 64,
        plan_hash="p" * 64,
        tier="quick",
        checks=[
            {
                "id": "gpu.count",
                "status": "pass",
                "expected": 8,
                "found": 8,
                "evidence": {"nvidia-smi": ["GPU 0"]},
            },
            {
                "id": "nic.link",
                "status": "pass",
                "expected": {"speed_gbps": 400, "state": "ACTIVE"},
                "found": {"speed_gbps": 400, "state": "ACTIVE"},
                "evidence": {"ibstat": "Rate: 400", "ok": True},
            },
        ],
        tool_versions={"driver": "550.54.15", "dcgm": "3.3.5"},
        gpu_serials=[{"index": 0, "serial": "1650923000001"}],
        nic_serials=[{"index": 0, "serial": "MT2310X00001"}],
        validity_hours=720,
        issued_at=NOW,
        run_id="run-1",
    )
    args.update(over)
    return cm.build(**args)


def test_a_certificate_is_signed_by_default_with_the_records_directory_key(records_dir: Path) -> None:
    assert not (records_dir / "keys").exists()
    cert = make()
    key = signing.signing_key()
    assert key.path == records_dir / "keys/signing.key"  # made on first use
    assert cert["schema"] == "clusterforge.certificate/v2" and cert["kid"] == key.kid
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    key.public.verify(base64.b64decode(cert["signature"]), canonical)  # raises when it does not verify
    assert cert["digest"] == hashlib.sha256(canonical).hexdigest()  # a name, not a seal
    assert cm.verify(cert, now=NOW).ok
    # key order and whitespace of the file do not matter
    reordered = json.loads(json.dumps(dict(reversed(list(cert.items()))), indent=4))
    assert cm.verify(reordered, now=NOW).ok
    assert set(cert) == {
        "schema",
        "cluster",
        "node",
        "expectation_digest",
        "plan_hash",
        "tier",
        "checks",
        "verdict",
        "tool_versions",
        "serials",
        "issued_at",
        "valid_until",
        "issuer",
        "kid",
        "digest",
        "signature",
    }
    assert cert["issued_at"] == "2030-05-01T08:00:00Z" and cert["valid_until"] == "2030-05-31T08:00:00Z"
    assert cert["verdict"] == "pass" and cert["issuer"]["run_id"] == "run-1"


# --- tampering: every field -----------------------------------------------------------------------


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into obj: containers (to add/remove entries) and scalars (to change)."""
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _changed(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1, str(value)]
    if isinstance(value, str):
        flipped = value[:-1] + chr(ord(value[-1]) ^ 1) if value else "x"  # one bit of the last character
        return [value + "x", value[:-1] if value else "x", flipped]
    if value is None:
        return ["x", 0]
    if isinstance(value, list):
        return [[*value, "extra"], value[:-1] if value else [0]]
    if isinstance(value, dict):
        return [{**value, "extra": 1}]
    raise AssertionError(type(value))


def _mutations(cert: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str, dict[str, Any]]]:
    for path in _leaves(cert):
        if not path:
            continue
        for new in _changed(_get(cert, path)):
            c = copy.deepcopy(cert)
            _get(c, path[:-1])[path[-1]] = new
            yield path, f"{'.'.join(map(str, path))} -> {new!r}", c
        c = copy.deepcopy(cert)  # and removing the field altogether
        parent = _get(c, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        yield path, f"del {'.'.join(map(str, path))}", c


def test_changing_or_removing_any_field_is_refused() -> None:
    """Every field, nested ones and list items included, the seals too: changed, bit-flipped, removed."""
    cert = make()
    assert cm.verify(cert, now=NOW).ok
    tried, fields = 0, set()
    for path, what, mutated in _mutations(cert):
        tried += 1
        fields.add(path[0])
        assert not cm.verify(mutated, now=NOW).ok, what
        assert not cm.verify_seal(mutated).ok, what
    assert tried > 150
    assert fields == set(cert)  # every top-level field (and everything in it) was tampered with


def test_a_forger_who_recomputes_the_digest_is_refused() -> None:
    forged = make()
    forged["verdict"] = "pass"
    forged["checks"][0]["status"] = "pass"
    forged["node"] = "ib-02"
    forged["digest"] = cm.compute_digest(forged)
    res = cm.verify(forged, now=NOW)
    assert not res.ok and res.reasons == [
        f"signature does not verify with key {forged['kid']}: the certificate was changed after it was signed"
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("verdict", "pass"),  # fail -> pass
        ("node", "ib-02"),  # another node
        ("valid_until", "2099-01-01T00:00:00Z"),  # expiry 2099
        ("tier", "full"),  # quick -> full
        ("expectation_digest", "f" * 64),
        ("issued_at", "2030-05-02T08:00:00Z"),
    ],
)
def test_the_attacks_of_issue_16_are_refused(field: str, value: str) -> None:
    failing = make(checks=[{"id": "gpu.ecc", "status": "fail", "expected": 0, "found": 3, "evidence": {}}])
    forged = {**failing, field: value}
    if field == "verdict":
        forged["checks"] = [{**failing["checks"][0], "status": "pass"}]
    forged["digest"] = cm.compute_digest(forged)
    res = cm.verify(forged, now=NOW)
    assert not res.ok and any("signature does not verify" in r for r in res.reasons), res.reasons


def test_signed_by_another_key_is_refused() -> None:
    """A certificate made from scratch with a key of one's own: unknown kid."""
    forged = make(signer=other_key())
    res = cm.verify(forged, now=NOW)
    assert not res.ok and res.reasons == [f"signed by an unknown or untrusted key (kid {forged['kid']})"]


def test_kid_swapped_to_a_trusted_key_is_refused() -> None:
    forged = make(signer=other_key())
    forged["kid"] = signing.signing_key().kid  # claims the trusted key; signed by another
    forged["digest"] = cm.compute_digest(forged)
    res = cm.verify(forged, now=NOW)
    assert not res.ok and "signature does not verify" in res.reasons[0]
    good = make()
    swapped = {**good, "kid": other_key().kid}
    assert cm.verify(swapped, now=NOW).reasons == [
        f"signed by an unknown or untrusted key (kid {swapped['kid']})",
        "digest mismatch: the certificate was changed after it was issued",
    ]


def test_signature_from_another_certificate_is_refused() -> None:
    a, b = make(), make(node="ib-02")
    assert not cm.verify({**a, "signature": b["signature"]}, now=NOW).ok


def test_unsigned_certificates_are_refused() -> None:
    cert = make()
    unsigned = {k: v for k, v in cert.items() if k != "signature"}
    assert "unsigned: no signature (re-certify)" in cm.verify(unsigned, now=NOW).reasons
    # what clusterforge wrote before signing: schema v1, a digest anyone can recompute, an optional HMAC
    v1 = {k: v for k, v in cert.items() if k not in ("signature", "kid")}
    v1["schema"] = "clusterforge.certificate/v1"
    v1["digest"] = cm.compute_digest(v1)
    assert cm.verify(v1, now=NOW).reasons == ["unsigned (schema v1): re-certify"]
    assert cm.verify({**v1, "hmac": "00" * 32}, now=NOW).reasons == ["unsigned (schema v1): re-certify"]
    assert "unsigned: no signature (re-certify)" in cm.verify({}, now=NOW).reasons


def test_nothing_trusted_nothing_verifies() -> None:
    assert not cm.verify(make(), trusted={}, now=NOW).ok


def test_garbage_signatures_are_refused_without_an_exception() -> None:
    cert = make()
    for sig in ("", "!!!", "AAAA", base64.b64encode(b"x" * 64).decode(), "é", 7, None, ["a"]):
        assert not cm.verify({**cert, "signature": sig}, now=NOW).ok, sig
    for kid in ("", "A" * 32, "0" * 31, 5, None, cert["kid"] + "0"):
        assert not cm.verify({**cert, "kid": kid}, now=NOW).ok, kid
    assert not cm.verify({**cert, "node": "\ud800"}, now=NOW).ok  # cannot even be encoded


def test_expiry_and_issue_time() -> None:
    cert = make(validity_hours=24)
    assert cm.verify(cert, now=NOW + timedelta(hours=23, minutes=59)).ok
    res = cm.verify(cert, now=NOW + timedelta(hours=24))
    assert not res.ok and res.reasons == ["expired at 2030-05-02T08:00:00Z"]
    early = cm.verify(cert, now=NOW - timedelta(hours=1))
    assert not early.ok and "issued in the future" in early.reasons[0]
    assert cm.verify(cert, now=NOW - timedelta(minutes=4)).ok  # within the clock skew
    assert cm.verify_seal(cert).ok  # the seal does not expire (records merge)


def test_verdict_follows_from_checks() -> None:
    failing = make(
        checks=[
            {"id": "a", "status": "pass", "expected": 1, "found": 1, "evidence": {}},
            {"id": "b", "status": "error", "expected": 1, "found": None, "evidence": {}},
            {"id": "c", "status": "fail", "expected": 1, "found": 0, "evidence": {}},
        ]
    )
    assert failing["verdict"] == "fail" and cm.verify(failing, now=NOW).ok
    erroring = make(checks=[{"id": "b", "status": "error", "expected": 1, "found": None, "evidence": {}}])
    assert erroring["verdict"] == "error"
    assert make(checks=[])["verdict"] == "error"
    lying = cm.seal({**failing, "verdict": "pass"})  # signed with the right key, still inconsistent
    assert not cm.verify(lying, now=NOW).ok


def test_shape_problems_are_reported() -> None:
    assert cm.verify([], now=NOW).reasons == ["not a JSON object"]  # type: ignore[arg-type]
    res = cm.verify(cm.seal({"schema": cm.SCHEMA, "node": "x"}), now=NOW)
    assert not res.ok and "missing field 'tier'" in res.reasons
    with pytest.raises(ValueError):
        make(tier="gold")


# --- files and the store --------------------------------------------------------------------------


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_write_is_atomic_private_and_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = os.umask(0)  # the most permissive umask: modes must not depend on it
    try:
        store = Store(tmp_path / "r.db")
        rid = store.start_run("certify", "lab", tier="quick")
        cert = make(run_id=rid)
        path = store.issue_certificate(cert, root=tmp_path / "certs")
    finally:
        os.umask(old)
    assert path == tmp_path / "certs/lab/ib-01-quick.json"
    assert json.loads(path.read_text()) == cert
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700 and _mode(tmp_path / "certs") == 0o700
    assert _mode(tmp_path / "r.db") == 0o600
    assert [f.name for f in path.parent.iterdir()] == ["ib-01-quick.json"]  # no temp file left
    assert store.certificates("ib-01") == []  # its run is still running
    store.add_node_result(rid, "ib-01", "pass", expectation_digest="e" * 64)
    store.finish_run(rid, "passed")
    assert store.certificates("ib-01", "quick") == [cert]
    store.record_certificate(cert, path)  # recording twice is a no-op
    assert len(store.certificates("ib-01")) == 1
    monkeypatch.setenv(cm.DIR_ENV, str(tmp_path / "env-certs"))
    assert cm.path_for(cert) == tmp_path / "env-certs/lab/ib-01-quick.json"


def test_existing_loose_files_and_folders_are_tightened_when_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install from before: ~/.local/state/clusterforge and everything in it 0755/0644."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLUSTERFORGE_DB")
    monkeypatch.delenv(cm.DIR_ENV)
    state = tmp_path / ".local/state/clusterforge"
    (state / "certificates/lab").mkdir(parents=True)
    old = state / "certificates/lab/ib-02-quick.json"
    old.write_text("{}")
    db = state / "records.db"
    Store(db).close()
    for p in (state, state / "certificates", state / "certificates/lab"):
        p.chmod(0o755)
    for f in (old, *state.glob("records.db*")):
        f.chmod(0o644)
    with Store() as store:
        rid = _finished_run(store, "ib-01")
        path = store.issue_certificate(make(run_id=rid))
    assert path.parent == state / "certificates/lab"
    for d in (state, state / "certificates", state / "certificates/lab", state / "keys"):
        assert _mode(d) == 0o700, d
    for f in (path, state / "keys/signing.key", *state.glob("records.db*")):
        assert _mode(f) == 0o600, f
    assert _mode(old) == 0o644  # a file not touched is left; its folder is private now
    # a folder the user named is left as it is (it may be /tmp); clusterforge's own below it are 0700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    cm.write(make(), shared)
    assert _mode(shared) == 0o755 and _mode(shared / "lab") == 0o700


def test_write_failure_leaves_the_previous_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = make()
    path = cm.write(old, tmp_path)

    def crash(src: object, dst: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        cm.write(make(tier="quick", validity_hours=1), tmp_path)
    assert json.loads(path.read_text()) == old
    assert sorted(f.name for f in path.parent.iterdir()) == ["ib-01-quick.json"]


def test_the_store_refuses_to_record_what_does_not_verify(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        for bad in (make(signer=other_key()), {**make(), "verdict": "fail"}):
            with pytest.raises(RecordsError, match="does not verify"):
                store.record_certificate(bad)
            with pytest.raises(RecordsError, match="does not verify"):
                store.issue_certificate(bad, root=tmp_path / "c")
        assert not (tmp_path / "c").exists()


def _finished_run(store: Store, *nodes: str, status: str | None = "passed") -> str:
    """A run with a result for each of `nodes`, finished with `status` (None: left running)."""
    rid = store.start_run("certify", "lab", tier="quick")
    for node in nodes:
        store.add_node_result(rid, node, "pass", expectation_digest="e" * 64)
    if status is not None:
        store.finish_run(rid, status)
    return rid


def test_a_certificate_counts_only_with_its_run_behind_it(tmp_path: Path) -> None:
    """No run, an unknown run, a run that did not finish, or a run with no result for the node: left out."""
    with Store(tmp_path / "r.db") as store:
        cases = {
            "no-run": None,
            "unknown-run": "run-unknown",
            "running": _finished_run(store, "running", status=None),
            "incomplete": _finished_run(store, "incomplete", status=None),
            "errored": _finished_run(store, "errored", status="error"),
            "no-result": _finished_run(store),
            "passed": _finished_run(store, "passed"),
            "failed": _finished_run(store, "failed", status="failed"),  # a run with a failed node finished
        }
        raw = sqlite3.connect(store.path)
        with raw:
            raw.execute("UPDATE runs SET status = 'incomplete' WHERE id = ?", (cases["incomplete"],))
        raw.close()
        for node, rid in cases.items():
            store.record_certificate(make(node=node, run_id=rid))
        counted = {n for n in cases if store.certificates(n)}
        assert counted == {"passed", "failed"}
        assert all(store.certificates(n, finished_only=False) for n in cases)  # all recorded, for audit


def test_key_material_is_never_written_outside_the_key_file(tmp_path: Path, records_dir: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        rid = _finished_run(store, "ib-01")
        path = store.issue_certificate(make(run_id=rid), root=tmp_path / "c")
    key = (records_dir / "keys/signing.key").read_bytes()
    raw = signing.signing_key().private.private_bytes_raw()
    pem_body = b"".join(key.splitlines()[1:-1])
    for f in [path, *tmp_path.glob("r.db*")]:
        data = f.read_bytes()
        assert raw not in data and pem_body not in data and base64.b64encode(raw) not in data
    assert raw.hex() not in repr(signing.signing_key())


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_verify_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    good = cm.write(make(issued_at=datetime.now(UTC)), tmp_path)
    res = runner.invoke(app, ["verify", str(good)])
    assert res.exit_code == 0 and res.output.startswith("valid: ib-01 quick pass")
    expired = tmp_path / "expired.json"
    expired.write_text(json.dumps(make(issued_at=datetime(2020, 1, 1, tzinfo=UTC))))
    res = runner.invoke(app, ["verify", str(expired), "--format", "json"])
    assert res.exit_code == 3 and json.loads(res.output)["reasons"] == ["expired at 2020-01-31T00:00:00Z"]
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**json.loads(good.read_text()), "tier": "full"}))
    res = runner.invoke(app, ["verify", str(tampered)])
    assert res.exit_code == 3 and "signature does not verify" in res.output
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps({**json.loads(good.read_text()), "schema": "clusterforge.certificate/v1"}))
    res = runner.invoke(app, ["verify", str(v1)])
    assert res.exit_code == 3 and "unsigned (schema v1): re-certify" in res.output
    foreign = cm.write(make(issued_at=datetime.now(UTC), signer=other_key(), node="ib-09"), tmp_path)
    res = runner.invoke(app, ["verify", str(foreign)])
    assert res.exit_code == 3 and "unknown or untrusted key" in res.output
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    assert runner.invoke(app, ["verify", str(garbage)]).exit_code == 2
    assert runner.invoke(app, ["verify", str(tmp_path / "missing.json")]).exit_code == 2
    (tmp_path / "list.json").write_text("[1]")
    assert runner.invoke(app, ["verify", str(tmp_path / "list.json")]).exit_code == 2


def test_cli_list(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        rid = store.start_run("certify", "lab", tier="quick")
        store.add_check_result(rid, CheckResult(node="ib-01", check_id="gpu.count", status="pass"))
        store.add_node_result(rid, "ib-01", "pass", expectation_digest="e" * 64)
        store.finish_run(rid, "passed")
        store.record_certificate(make(run_id=rid, issued_at=datetime.now(UTC)))
    res = CliRunner().invoke(app, ["list", "ib-01", "--db", str(db)])
    assert res.exit_code == 0 and "quick  pass" in res.output and "valid" in res.output
    res = CliRunner().invoke(app, ["list", "nobody", "--db", str(db)])
    assert "no certificates" in res.output


def test_latest_certificates_per_node(tmp_path: Path) -> None:
    from clusterforge.records.store import latest_certificates

    db = tmp_path / "r.db"
    with Store(db) as store:
        rid = _finished_run(store, "ib-01", "ib-02")
        old = make(issued_at=NOW - timedelta(days=2), run_id=rid)
        new = make(tier="full", issued_at=NOW, run_id=rid)
        other_cluster = make(cluster="prod", node="ib-02", issued_at=NOW, run_id=rid)
        unfinished = make(node="ib-02", issued_at=NOW, run_id="run-unknown")  # its run is not recorded
        for c in (old, new, other_cluster, unfinished):
            store.record_certificate(c)
    got = latest_certificates("lab", ["ib-01", "ib-02"], db=db)
    assert got == {"ib-01": new, "ib-02": None}
    assert latest_certificates("lab", ["ib-01"], tier="quick", db=db) == {"ib-01": old}
