"""Certificates: canonical digest, every field sealed (nested ones too), HMAC, expiry, files, CLI."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.records import Store
from clusterforge.records import certificate as cm
from clusterforge.records.cli import app

NOW = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)
KEY = "s3cret-cert-key"


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cm.KEY_ENV, raising=False)


def make(key: str | None = None, **over: Any) -> dict[str, Any]:
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
        key=key,
    )
    args.update(over)
    return cm.build(**args)


def test_digest_is_sha256_of_canonical_json_without_seals() -> None:
    cert = make()
    body = {k: v for k, v in cert.items() if k not in ("digest", "hmac")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert b" " not in canonical.replace(b"GPU 0", b"").replace(b"Rate: 400", b"")
    assert cert["digest"] == hashlib.sha256(canonical).hexdigest()
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
        "digest",
    }
    assert cert["issued_at"] == "2030-05-01T08:00:00Z" and cert["valid_until"] == "2030-05-31T08:00:00Z"
    assert cert["verdict"] == "pass" and cert["issuer"]["run_id"] == "run-1"


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
        return [
            value + "x",
            value[:-1] if value else "x",
            value.upper() if value != value.upper() else value + "!",
        ]
    if value is None:
        return ["x", 0]
    if isinstance(value, list):
        return [[*value, "extra"], value[:-1] if value else [0]]
    if isinstance(value, dict):
        return [{**value, "extra": 1}]
    raise AssertionError(type(value))


def _mutations(cert: dict[str, Any], skip: tuple[str, ...] = ()) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _leaves(cert):
        if not path or path[0] in skip:
            continue
        for new in _changed(_get(cert, path)):
            c = copy.deepcopy(cert)
            parent = _get(c, path[:-1])
            parent[path[-1]] = new
            yield f"{'.'.join(map(str, path))} -> {new!r}", c
        c = copy.deepcopy(cert)  # and removing the field altogether
        parent = _get(c, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        yield f"del {'.'.join(map(str, path))}", c


def test_changing_any_field_fails_verification() -> None:
    cert = make()
    assert cm.verify(cert, now=NOW).ok
    tried = 0
    for what, mutated in _mutations(cert, skip=("hmac",)):
        tried += 1
        assert not cm.verify(mutated, now=NOW).ok, what
    assert tried > 60  # every top-level, nested and list field was tried


def test_changing_any_field_fails_with_hmac_too() -> None:
    cert = make(key=KEY)
    assert "hmac" in cert and cm.verify(cert, key=KEY, now=NOW).ok
    for what, mutated in _mutations(cert):
        res = cm.verify(mutated, key=KEY, now=NOW)
        assert not res.ok, what


def test_a_forger_who_recomputes_the_digest_is_caught_by_the_hmac() -> None:
    cert = make(key=KEY)
    forged = copy.deepcopy(cert)
    forged["node"] = "ib-02"
    forged["digest"] = cm.compute_digest(forged)
    assert cm.verify(forged, now=NOW).ok  # digest alone is only an integrity check
    res = cm.verify(forged, key=KEY, now=NOW)
    assert not res.ok and any("invalid hmac" in r for r in res.reasons)


def test_hmac_is_required_when_a_key_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    unsigned = make()
    assert "hmac" not in unsigned and cm.verify(unsigned, now=NOW).ok
    monkeypatch.setenv(cm.KEY_ENV, KEY)
    res = cm.verify(unsigned, now=NOW)
    assert not res.ok and res.reasons == ["missing hmac (a certificate key is configured)"]
    signed = make()  # build() takes the key from the environment
    expected = hmac.new(KEY.encode(), cm.canonical_json(cm.body_of(signed)), hashlib.sha256).hexdigest()
    assert signed["hmac"] == expected and cm.verify(signed, now=NOW).ok
    assert not cm.verify(signed, key="another-key", now=NOW).ok
    monkeypatch.delenv(cm.KEY_ENV)
    assert cm.verify(signed, now=NOW).ok  # without a key, the HMAC cannot be checked: the digest still is


def test_expiry_and_issue_time() -> None:
    cert = make(validity_hours=24)
    assert cm.verify(cert, now=NOW + timedelta(hours=23, minutes=59)).ok
    res = cm.verify(cert, now=NOW + timedelta(hours=24))
    assert not res.ok and res.reasons == ["expired at 2030-05-02T08:00:00Z"]
    early = cm.verify(cert, now=NOW - timedelta(hours=1))
    assert not early.ok and "issued in the future" in early.reasons[0]
    assert cm.verify(cert, now=NOW - timedelta(minutes=4)).ok  # within the clock skew


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
    lying = cm.seal({**failing, "verdict": "pass"})  # resealed, still inconsistent
    assert not cm.verify(lying, now=NOW).ok


def test_shape_problems_are_reported() -> None:
    assert cm.verify([], now=NOW).reasons == ["not a JSON object"]  # type: ignore[arg-type]
    res = cm.verify(cm.seal({"schema": cm.SCHEMA, "node": "x"}), now=NOW)
    assert not res.ok and "missing field 'tier'" in res.reasons
    with pytest.raises(ValueError):
        make(tier="gold")


def test_write_is_atomic_and_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert = make()
    store = Store(tmp_path / "r.db")
    rid = store.start_run("certify", "lab", tier="quick")
    cert = make(run_id=rid)
    path = store.issue_certificate(cert, root=tmp_path / "certs")
    assert path == tmp_path / "certs/lab/ib-01-quick.json"
    assert json.loads(path.read_text()) == cert and oct(path.stat().st_mode & 0o777) == "0o644"
    assert [f.name for f in path.parent.iterdir()] == ["ib-01-quick.json"]  # no temp file left
    assert store.certificates("ib-01") == []  # its run is still running
    store.finish_run(rid, "passed")
    assert store.certificates("ib-01", "quick") == [cert]
    store.record_certificate(cert, path)  # recording twice is a no-op
    assert len(store.certificates("ib-01")) == 1
    monkeypatch.setenv(cm.DIR_ENV, str(tmp_path / "env-certs"))
    assert cm.path_for(cert) == tmp_path / "env-certs/lab/ib-01-quick.json"


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


def test_key_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cm.KEY_ENV, KEY)
    with Store(tmp_path / "r.db") as store:
        path = store.issue_certificate(make(), root=tmp_path / "c")
    for f in [path, *tmp_path.glob("r.db*")]:
        assert KEY.encode() not in f.read_bytes()


# --- CLI -------------------------------------------------------------------------------------------


def test_cli_verify_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    good = cm.write(make(issued_at=datetime.now(UTC)), tmp_path)
    res = runner.invoke(app, ["verify", str(good)])
    assert res.exit_code == 0 and res.output.startswith("valid: ib-01 quick pass")
    expired = tmp_path / "expired.json"
    expired.write_text(json.dumps(make(issued_at=datetime(2020, 1, 1, tzinfo=UTC))))
    res = runner.invoke(app, ["verify", str(expired), "--json"])
    assert res.exit_code == 3 and json.loads(res.output)["reasons"] == ["expired at 2020-01-31T00:00:00Z"]
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**json.loads(good.read_text()), "tier": "full"}))
    assert runner.invoke(app, ["verify", str(tampered)]).exit_code == 3
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    assert runner.invoke(app, ["verify", str(garbage)]).exit_code == 2
    assert runner.invoke(app, ["verify", str(tmp_path / "missing.json")]).exit_code == 2
    (tmp_path / "list.json").write_text("[1]")
    assert runner.invoke(app, ["verify", str(tmp_path / "list.json")]).exit_code == 2
    monkeypatch.setenv(cm.KEY_ENV, KEY)
    res = runner.invoke(app, ["verify", str(good)])
    assert res.exit_code == 3 and "missing hmac" in res.output and KEY not in res.output


def test_cli_list(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.record_certificate(make(run_id=None, issued_at=datetime.now(UTC)))
    res = CliRunner().invoke(app, ["list", "ib-01", "--db", str(db)])
    assert res.exit_code == 0 and "quick  pass" in res.output and "valid" in res.output
    res = CliRunner().invoke(app, ["list", "nobody", "--db", str(db)])
    assert "no certificates" in res.output


def test_latest_certificates_per_node(tmp_path: Path) -> None:
    from clusterforge.records.store import latest_certificates

    db = tmp_path / "r.db"
    with Store(db) as store:
        old = make(issued_at=NOW - timedelta(days=2), run_id=None)
        new = make(tier="full", issued_at=NOW, run_id=None)
        other_cluster = make(cluster="prod", node="ib-02", issued_at=NOW, run_id=None)
        unfinished = make(node="ib-02", issued_at=NOW, run_id="run-unknown")  # its run is not recorded
        for c in (old, new, other_cluster, unfinished):
            store.record_certificate(c)
    got = latest_certificates("lab", ["ib-01", "ib-02"], db=db)
    assert got == {"ib-01": new, "ib-02": None}
    assert latest_certificates("lab", ["ib-01"], tier="quick", db=db) == {"ib-01": old}
