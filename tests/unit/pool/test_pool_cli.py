"""`clusterforge pool` sub-app on the file manager: status, drain, admit (with holds and --force)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.cli.pool import app
from clusterforge.plan import Plan
from clusterforge.pool.file import FilePool
from clusterforge.pool.kubernetes import KubernetesPool
from clusterforge.pool.managers import manager_for
from clusterforge.pool.slurm import SlurmPool
from clusterforge.records import Store
from clusterforge.records import certificate as cm


@pytest.fixture(scope="module")
def plan_doc(lab_plan: Plan) -> dict[str, Any]:
    return dict(lab_plan.doc)


@pytest.fixture
def env(tmp_path: Path, plan_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_doc))
    opts = ["--manager", "file", "--registry", str(tmp_path / "pool.json")]
    return {
        "plan": plan_doc,
        "spec": str(plan),
        "opts": opts,
        "db": tmp_path / "r.db",
        "registry": tmp_path / "pool.json",
    }


def run(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def certify(db: Path, plan: dict[str, Any], node: str, verdict: str, check: str = "gpu.ecc") -> None:
    digest = next(n for n in plan["nodes"] if n["name"] == node)["expectation_digest"]
    status = "pass" if verdict == "pass" else "fail"
    with Store(db) as store:
        rid = store.start_run("certify", "lab", tier="quick")
        cert = cm.build(
            cluster="lab",
            node=node,
            expectation_digest=digest,
            plan_hash=plan["plan_hash"],
            tier="quick",
            run_id=rid,
            checks=[{"id": check, "status": status, "expected": 0, "found": 0, "evidence": {}}],
        )
        store.record_certificate(cert)
        store.add_node_result(rid, node, verdict, expectation_digest=digest)
        store.finish_run(rid, "passed" if verdict == "pass" else "failed")


def test_status_drain_admit(env: dict[str, Any]) -> None:
    res = run(["status", env["spec"], *env["opts"]])
    assert res.exit_code == 0 and res.output.splitlines()[0].split()[:2] == ["roce-01", "unknown"]
    res = run(["drain", env["spec"], "ib-01", "--reason", "burn-in", *env["opts"], "--db", str(env["db"])])
    assert res.exit_code == 0 and res.output == "ib-01: drained\n"
    res = run(["status", env["spec"], "ib-01", "--format", "json", *env["opts"]])
    assert json.loads(res.output)[0]["reason"] == "clusterforge: burn-in"
    res = run(["admit", env["spec"], "ib-01", *env["opts"], "--db", str(env["db"])])
    assert res.exit_code == 3 and "ib-01: drained (clusterforge: no quick certificate)" in res.output
    certify(env["db"], env["plan"], "ib-01", "pass")
    res = run(["admit", env["spec"], "ib-01", *env["opts"], "--db", str(env["db"])])
    assert res.exit_code == 0 and res.output == "ib-01: admitted\n"
    state = FilePool(env["registry"]).status(["ib-01"])["ib-01"]
    assert state.state == "idle" and state.labels["clusterforge.io/certified"] == "true"
    with Store(env["db"]) as store:
        assert [e.action for e in store.pool_events("ib-01")] == ["drain", "drain", "admit"]


def test_flapping_node_is_held_until_forced(env: dict[str, Any]) -> None:
    for verdict in ("fail", "pass", "fail", "pass"):
        certify(env["db"], env["plan"], "ib-02", verdict)
    args = ["admit", env["spec"], "ib-02", *env["opts"], "--db", str(env["db"])]
    res = run(args)
    assert res.exit_code == 3 and "ib-02: held (clusterforge: held for review (flapping))" in res.output
    assert run(args).exit_code == 3  # still held on the next try, though the last certificate passed
    res = run([*args, "--force"])
    assert res.exit_code == 0 and res.output == "ib-02: admitted\n"
    with Store(env["db"]) as store:
        assert [e.action for e in store.pool_events("ib-02")] == ["hold", "hold", "override", "admit"]


def _plant(db: Path, cert: dict[str, Any]) -> None:
    """A certificate row written straight into the database (as a forger with write access would)."""
    raw = sqlite3.connect(db)
    with raw:
        raw.execute(
            "INSERT INTO certificates (digest, cluster, node, tier, expectation_digest, verdict, issued_at,"
            " valid_until, run_id, path, body, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,NULL,?,?)",
            (
                cert["digest"],
                cert["cluster"],
                cert["node"],
                cert["tier"],
                cert["expectation_digest"],
                cert["verdict"],
                cert["issued_at"],
                cert["valid_until"],
                cert["issuer"]["run_id"],
                json.dumps(cert),
                cert["issued_at"],
            ),
        )
    raw.close()


def test_admit_refuses_forged_and_unsigned_certificates_in_the_database(env: dict[str, Any]) -> None:
    certify(env["db"], env["plan"], "ib-01", "fail")
    with Store(env["db"]) as store:
        (failed,) = store.certificates("ib-01")
    later = datetime.fromisoformat(failed["issued_at"].replace("Z", "+00:00")) + timedelta(minutes=1)
    forged = {**failed, "verdict": "pass", "issued_at": cm.ts(later)}
    forged["checks"] = [{**c, "status": "pass"} for c in failed["checks"]]
    forged["digest"] = cm.compute_digest(forged)
    _plant(env["db"], forged)
    unsigned = {k: v for k, v in forged.items() if k not in ("signature", "kid")}
    unsigned["schema"] = "clusterforge.certificate/v1"
    unsigned["digest"] = cm.compute_digest(unsigned)
    _plant(env["db"], unsigned)
    with Store(env["db"]) as store:
        assert len(store.certificates("ib-01")) == 3  # the store returns them; admission verifies
    res = run(["admit", env["spec"], "ib-01", *env["opts"], "--db", str(env["db"])])
    assert res.exit_code == 3 and "ib-01: drained (clusterforge: failed gpu.ecc)" in res.output
    assert FilePool(env["registry"]).status(["ib-01"])["ib-01"].state == "drained"


def test_bad_input(env: dict[str, Any], tmp_path: Path) -> None:
    assert run(["admit", env["spec"], "nobody", *env["opts"], "--db", str(env["db"])]).exit_code == 2
    assert run(["status", str(tmp_path / "missing.json")]).exit_code == 2
    (tmp_path / "x.json").write_text("{}")
    assert run(["status", str(tmp_path / "x.json")]).exit_code == 2
    assert run(["status", env["spec"], "--manager", "pbs"]).exit_code == 2
    assert run(["admit", env["spec"], *env["opts"]]).exit_code == 2  # no node named


def test_spec_from_the_environment_and_the_old_plan_option(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pool status NODE` with CLUSTERFORGE_SPEC; `--plan` still works for one release, with a warning."""
    monkeypatch.setenv("CLUSTERFORGE_SPEC", env["spec"])
    res = run(["status", "ib-01", "--format", "json", *env["opts"]])
    assert res.exit_code == 0 and [s["node"] for s in json.loads(res.output)] == ["ib-01"]
    monkeypatch.delenv("CLUSTERFORGE_SPEC")
    old = CliRunner().invoke(app, ["status", "ib-01", "--plan", env["spec"], *env["opts"]])
    assert old.exit_code == 0 and old.stdout.split()[:2] == ["ib-01", "unknown"]
    assert "--plan is deprecated" in old.stderr and "SPEC" in old.stderr


def test_manager_for_the_plan(
    plan_doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/custom.conf")
    pm = manager_for(plan_doc)
    assert (
        isinstance(pm, SlurmPool) and pm.env is not None and pm.env["SLURM_CONF"] == "/etc/slurm/custom.conf"
    )
    assert isinstance(manager_for(plan_doc, "kubernetes"), KubernetesPool)
    fp = manager_for(plan_doc, "file", tmp_path / "p.json")
    assert isinstance(fp, FilePool) and fp.path == tmp_path / "p.json"


def test_admit_drains_with_the_registrys_check_and_action(env: dict[str, Any]) -> None:
    certify(env["db"], env["plan"], "ib-01", "fail", check="gpu.remapped_rows")
    res = run(["admit", env["spec"], "ib-01", *env["opts"], "--db", str(env["db"])])
    assert res.exit_code == 3
    assert "ib-01: drained (clusterforge: gpu.remapped_rows: drain then reset_gpu/service)" in res.output
