"""Signing keys: made on first use (0600 in 0700), idempotent and race-free, a named key file, rotation
(retired keys verify, deleted ones do not), trust of another controller's key, the legacy HMAC variable
refused, and no key variable in the environment of ansible-playbook, validators or anything else."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge import childenv
from clusterforge.cli.certificate import app
from clusterforge.records import certificate as cm
from clusterforge.records import signing

NOW = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def make(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(
        cluster="lab",
        node="ib-01",
        expectation_digest="e" * 64,
        plan_hash=None,
        tier="quick",
        checks=[{"id": "gpu.ecc", "status": "pass", "expected": 0, "found": 0, "evidence": {}}],
        issued_at=NOW,
        run_id="run-1",
    )
    return cm.build(**{**args, **over})


# --- generation -----------------------------------------------------------------------------------


def test_the_key_is_made_on_first_use_private_and_kept(records_dir: Path) -> None:
    old = os.umask(0)  # whatever the umask, the key is 0600 in a 0700 folder
    try:
        key = signing.signing_key()
    finally:
        os.umask(old)
    path = records_dir / "keys/signing.key"
    assert key.path == path and _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, unencrypted
    before = path.read_bytes()
    assert signing.signing_key().kid == key.kid and path.read_bytes() == before  # idempotent
    assert signing.generate(path) is False and path.read_bytes() == before  # never overwritten
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing.key"]  # no temp file left
    assert len(key.kid) == 32 and key.kid == signing.kid_of(key.public)
    assert set(signing.trusted_keys()) == {key.kid}


def test_a_loose_existing_key_is_tightened(records_dir: Path) -> None:
    key = signing.signing_key()
    key.path.chmod(0o644)
    key.path.parent.chmod(0o755)
    signing.trust(key.public)  # touches keys/
    assert signing.signing_key().kid == key.kid
    assert _mode(key.path) == 0o600 and _mode(key.path.parent) == 0o700


def _first_use(args: tuple[str, str]) -> str:
    db, barrier_file = args
    os.environ["CLUSTERFORGE_DB"] = db
    while not Path(barrier_file).exists():  # start together
        time.sleep(0.001)
    return signing.signing_key().kid


def test_concurrent_first_use_makes_one_key(records_dir: Path) -> None:
    go = records_dir / "go"
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(6) as pool:
        pending = pool.map_async(_first_use, [(str(records_dir / "records.db"), str(go))] * 12)
        go.touch()
        kids = pending.get(timeout=60)
    assert len(set(kids)) == 1
    assert kids[0] == signing.signing_key().kid
    assert sorted(p.name for p in (records_dir / "keys").iterdir()) == ["signing.key"]


def test_a_key_published_meanwhile_wins(records_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between our look and our write another process made the key: ours is dropped, theirs is used."""
    path = records_dir / "keys/signing.key"
    real_link = os.link

    def racing_link(src: Any, dst: Any) -> None:
        monkeypatch.setattr(os, "link", real_link)
        assert signing.generate(path) is True  # the other process, first
        real_link(src, dst)

    monkeypatch.setattr(os, "link", racing_link)
    assert signing.generate(path) is False
    assert os.link is real_link
    theirs = path.read_bytes()
    assert signing.signing_key().path.read_bytes() == theirs
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing.key"]


def test_a_named_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = tmp_path / "secrets/cert.key"
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(named))
    cert = make()
    assert named.exists() and _mode(named) == 0o600 and _mode(named.parent) == 0o700
    assert cert["kid"] == signing.signing_key().kid and cm.verify(cert, now=NOW).ok
    named.write_text("not a key")
    with pytest.raises(signing.SigningKeyError, match="not an unencrypted Ed25519 private key"):
        make()


def test_the_legacy_hmac_variable_is_a_migration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    cert = make()
    monkeypatch.setenv(signing.LEGACY_KEY_ENV, "s3cret-hmac")
    for call in (make, lambda: cm.verify(cert, now=NOW), signing.trusted_keys):
        with pytest.raises(signing.SigningKeyError) as exc:
            call()
        assert "CLUSTERFORGE_CERT_KEY is no longer used" in str(exc.value) and "s3cret" not in str(exc.value)
        assert exc.value.exit_code == 2


# --- trust and rotation ---------------------------------------------------------------------------


def test_rotation_retires_the_old_key_to_verify_only(records_dir: Path) -> None:
    old_cert = make()
    old_kid = old_cert["kid"]
    res = CliRunner().invoke(app, ["rotate-key"])
    assert res.exit_code == 0 and f"{old_kid} retired to verify-only" in res.output
    new = signing.signing_key()
    assert new.kid != old_kid and new.kid in res.output
    retired = records_dir / f"keys/trusted/{old_kid}.pub"
    assert _mode(retired) == 0o600 and _mode(retired.parent) == 0o700
    assert "PRIVATE" not in retired.read_text()
    new_cert = make()
    assert new_cert["kid"] == new.kid
    assert cm.verify(old_cert, now=NOW).ok and cm.verify(new_cert, now=NOW).ok
    res = CliRunner().invoke(app, ["keys"])
    assert f"{new.kid}  signing" in res.output and f"{old_kid}  verify only" in res.output
    retired.unlink()  # the old key is no longer trusted (e.g. it leaked)
    assert cm.verify(old_cert, now=NOW).reasons == [f"signed by an unknown or untrusted key (kid {old_kid})"]
    assert cm.verify(new_cert, now=NOW).ok


def test_a_deleted_signing_key_verifies_nothing_it_signed(records_dir: Path) -> None:
    cert = make()
    (records_dir / "keys/signing.key").unlink()
    assert signing.trusted_keys() == {}  # verifying never makes a key
    assert not (records_dir / "keys/signing.key").exists()
    assert "unknown or untrusted key" in cm.verify(cert, now=NOW).reasons[0]
    assert make()["kid"] != cert["kid"]  # signing makes a new one


def test_rotate_without_a_key_makes_one() -> None:
    old, new = signing.rotate()
    assert old is None and new.kid == signing.signing_key().kid


def test_public_key_and_trust_key(tmp_path: Path, records_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Controller B trusts controller A's public key: A's certificates verify on B."""
    res = CliRunner().invoke(app, ["public-key"])
    assert res.exit_code == 0 and "BEGIN PUBLIC KEY" in res.output and "PRIVATE" not in res.output
    pem = tmp_path / "a.pub"
    pem.write_text(res.output.split("\n", 1)[1])
    a_cert = make()
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "b/records.db"))  # controller B
    assert not cm.verify(a_cert, now=NOW).ok
    res = CliRunner().invoke(app, ["trust-key", str(pem)])
    assert res.exit_code == 0 and a_cert["kid"] in res.output
    assert cm.verify(a_cert, now=NOW).ok
    assert (tmp_path / f"b/keys/trusted/{a_cert['kid']}.pub").exists()
    (tmp_path / "bad.pub").write_text("junk")
    assert CliRunner().invoke(app, ["trust-key", str(tmp_path / "bad.pub")]).exit_code != 0


def test_an_unreadable_trusted_file_is_left_out_and_reported(records_dir: Path) -> None:
    key = signing.signing_key()
    (records_dir / "keys/trusted").mkdir(mode=0o700)
    (records_dir / "keys/trusted/junk.pub").write_text("junk")
    problems: list[str] = []
    assert set(signing.trusted_keys(problems)) == {key.kid}
    assert len(problems) == 1 and "junk.pub" in problems[0]


# --- no key variable in any child's environment ----------------------------------------------------


@pytest.fixture
def key_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    named = tmp_path / "vault/cert.key"
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(named))
    monkeypatch.setenv("CLUSTERFORGE_CERT_KEY_PASSPHRASE", "pp-do-not-leak")  # any CLUSTERFORGE_CERT_KEY*
    signing.signing_key()
    return named


def _clean(env: dict[str, str], named: Path) -> None:
    assert not [k for k in env if k.startswith("CLUSTERFORGE_CERT_KEY")], sorted(env)
    assert not [k for k, v in env.items() if str(named) in v or "pp-do-not-leak" in v]


def test_child_env_and_scrub(key_env: Path) -> None:
    _clean(childenv.child_env({"EXTRA": "1", "CLUSTERFORGE_CERT_KEY": "x"}), key_env)
    assert childenv.child_env({"EXTRA": "1"})["EXTRA"] == "1"
    kid = signing.signing_key().kid
    childenv.scrub_environ()
    _clean(dict(os.environ), key_env)
    assert signing.key_path() == key_env and signing.signing_key().kid == kid  # still known in-process


def test_ansible_playbook_gets_no_key_variable(
    key_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ansible_runner

    from clusterforge.run import ansible

    seen: dict[str, dict[str, str]] = {}

    class Result:
        rc, status, stats = 0, "successful", {}

    def fake_run(**kw: Any) -> Result:
        seen["inherited"] = dict(os.environ)  # ansible-runner starts from a copy of os.environ
        seen["envvars"] = dict(kw["envvars"])
        return Result()

    monkeypatch.setattr(ansible_runner, "run", fake_run)
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv/hosts.yml").write_text("all: {}\n")
    ansible.run_playbook("site.yml", tmp_path / "inv", env={"CF_LAB": "1"})
    _clean(seen["inherited"], key_env)
    _clean(seen["envvars"], key_env)


def test_validator_processes_get_no_key_variable(key_env: Path, tmp_path: Path) -> None:
    from clusterforge.certify.runner import NodeRun, run_node

    run = NodeRun("ib-01", tmp_path / "ib-01.jsonl", deadline_s=60)
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    run_node([sys.executable, "-c", dump], run, env={"CLUSTERFORGE_BMC_USER": "admin"})
    env = json.loads(run.results.with_suffix(".log").read_text())
    _clean(env, key_env)
    assert env["CLUSTERFORGE_BMC_USER"] == "admin"


def test_the_cli_scrubs_the_environment_first(key_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge import cli

    seen: dict[str, str] = {}
    monkeypatch.setattr(cli, "app", lambda: seen.update(os.environ))
    cli.main()
    _clean(seen, key_env)
    assert signing.key_path() == key_env
