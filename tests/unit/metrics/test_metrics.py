"""clusterforge_* metrics from a records database built here, parsed back with prometheus_client."""

from __future__ import annotations

import sys
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.metrics.collect import collect
from clusterforge.metrics.exporter import TEXTFILE, parse_listen, server, write_textfile
from clusterforge.metrics.exposition import Family, format_value, render
from clusterforge.records import CheckResult, Store
from clusterforge.records import certificate as certmod
from clusterforge.records.model import NodeOutcome, RunOutcome
from tests.conftest import REPO

parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (dev extra) not installed")

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIGEST = "a" * 64


def parse(text: str) -> dict[str, Any]:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def value(fams: dict[str, Any], name: str, **labels: str) -> float:
    """The value of the one sample of `name` (family name without _total) with exactly these labels."""
    fam = fams[name]
    hits = [s.value for s in fam.samples if s.labels == labels]
    assert len(hits) == 1, (name, labels, [s.labels for s in fam.samples])
    return float(hits[0])


def has(fams: dict[str, Any], name: str, **labels: str) -> bool:
    return any(all(s.labels.get(k) == v for k, v in labels.items()) for s in fams[name].samples)


@pytest.fixture
def db(isolated: Path) -> Path:
    """Two nodes certified (quick): n1 passes, n2 fails rdma.port on one rail; n1 drained then admitted,
    n2 drained; a drift run finding 1 item on n2; a provision run; and a run still running (never counts)."""
    path = isolated / "records.db"
    with Store(path) as s:
        rid = s.start_run("certify", "lab", tier="quick", nodes=["n1", "n2"], now=T0)
        s.add_check_results(
            rid,
            [
                CheckResult("n1", "gpu.count", "pass"),
                CheckResult("n1", "rdma.port[rail0]", "pass"),
                CheckResult("n1", "rdma.port[rail1]", "pass"),
                CheckResult("n2", "gpu.count", "pass"),
                CheckResult("n2", "rdma.port[rail0]", "pass"),
                CheckResult("n2", "rdma.port[rail1]", "fail"),
                CheckResult("n2", "software.time_sync", "error"),
            ],
            now=T0,
        )
        s.add_node_result(rid, "n1", "pass", expectation_digest=DIGEST, now=T0)
        s.add_node_result(rid, "n2", "fail", expectation_digest=DIGEST, now=T0)
        s.finish_run(rid, "failed", now=T0 + timedelta(minutes=2))
        for node in ("n1", "n2"):
            checks = [{"id": "gpu.count", "status": "pass", "expected": 8, "found": 8, "evidence": {}}]
            if node == "n2":
                checks.append(
                    {"id": "rdma.port", "status": "fail", "expected": "up", "found": "down", "evidence": {}}
                )
            cert = certmod.build(
                cluster="lab",
                node=node,
                expectation_digest=DIGEST,
                plan_hash=None,
                tier="quick",
                checks=checks,
                issued_at=T0,
                validity_hours=24,
                run_id=rid,
            )
            s.record_certificate(cert)
        s.record_pool_event("n1", "drain", "clusterforge: x", now=T0)
        s.record_pool_event("n1", "admit", "certified", now=T0 + timedelta(minutes=3))
        s.record_pool_event("n2", "drain", "clusterforge: failed rdma.port", now=T0 + timedelta(minutes=3))

        drift = s.start_run("drift", "lab", now=T0 + timedelta(hours=1))
        drifted = (NodeOutcome("n1", "ok"), NodeOutcome("n2", "drifted", 1))
        s.finish_with_outcome(
            drift, RunOutcome("failed", "", drifted), now=T0 + timedelta(hours=1, minutes=1)
        )
        unreachable = s.start_run("drift", "lab", now=T0 + timedelta(hours=1, minutes=5))
        s.finish_with_outcome(  # n2 not checked: its newest drift result stays the one above
            unreachable,
            RunOutcome("failed", "", (NodeOutcome("n2", "unreachable"),)),
            now=T0 + timedelta(hours=1, minutes=6),
        )

        prov = s.start_run("provision", "lab", now=T0 - timedelta(hours=1))
        done = (NodeOutcome("n1", "changed", 3, 321.5), NodeOutcome("n2", "skipped"))
        s.finish_with_outcome(prov, RunOutcome("passed", "", done), now=T0 - timedelta(minutes=40))
        check = s.start_run("provision", "lab", tier="check", now=T0 - timedelta(minutes=30))
        would = (NodeOutcome("n1", "failed", 0, 5.0),)  # check mode: changes nothing, never counted
        s.finish_with_outcome(check, RunOutcome("failed", "", would), now=T0 - timedelta(minutes=29))

        live = s.start_run("certify", "lab", tier="full", now=T0 + timedelta(hours=2))
        s.add_check_results(live, [CheckResult("n1", "gpu.count", "fail")])
        s.add_node_result(live, "n1", "fail", now=T0 + timedelta(hours=2))
    return path


def test_names_types_and_labels_follow_the_conventions(db: Path) -> None:
    text = render(collect(db, now=T0 + timedelta(hours=3)))
    fams = parse(text)
    assert fams and all(name.startswith("clusterforge_") for name in fams)
    for f in fams.values():
        assert f.type in ("gauge", "counter")
        if f.type == "counter":
            assert all(s.name.endswith("_total") for s in f.samples)
        for s in f.samples:
            assert set(s.labels) <= {
                "node",
                "tier",
                "check",
                "status",
                "verdict",
                "state",
                "action",
                "test",
                "kind",
                "cluster",
            }
    for name in fams:
        if "timestamp" in name or "duration" in name:
            assert name.endswith("_seconds")


def test_verdicts_certificates_and_checks(db: Path) -> None:
    now = T0 + timedelta(hours=3)
    fams = parse(render(collect(db, now=now)))
    v = "clusterforge_node_verdict"
    assert value(fams, v, node="n1", tier="quick", verdict="pass") == 1
    assert value(fams, v, node="n1", tier="quick", verdict="fail") == 0
    assert value(fams, v, node="n2", tier="quick", verdict="fail") == 1
    assert not has(fams, v, tier="full")  # the running full-tier run never counts
    until = (T0 + timedelta(hours=24)).timestamp()
    assert value(fams, "clusterforge_certificate_expiry_timestamp_seconds", node="n1", tier="quick") == until
    assert value(fams, "clusterforge_node_certified", node="n1", tier="quick") == 1
    assert value(fams, "clusterforge_node_certified", node="n2", tier="quick") == 0
    later = parse(render(collect(db, now=T0 + timedelta(hours=25))))
    assert value(later, "clusterforge_node_certified", node="n1", tier="quick") == 0  # expired
    c = "clusterforge_check_status"
    assert value(fams, c, node="n2", check="rdma.port", status="fail") == 1  # rails folded, worst wins
    assert value(fams, c, node="n1", check="rdma.port", status="pass") == 1
    assert value(fams, c, node="n2", check="software.time_sync", status="error") == 1
    assert value(fams, c, node="n1", check="gpu.count", status="fail") == 0  # not from the running run
    assert not any("[" in s.labels.get("check", "") for s in fams[c].samples)


def test_drift_provision_pool_and_runs(db: Path) -> None:
    fams = parse(render(collect(db, now=T0 + timedelta(hours=3))))
    assert value(fams, "clusterforge_drift_items", node="n2") == 1
    assert value(fams, "clusterforge_drift_items", node="n1") == 0
    assert value(fams, "clusterforge_provision_last_success", node="n1") == 1
    assert value(fams, "clusterforge_provision_last_duration_seconds", node="n1") == 321.5
    assert not has(fams, "clusterforge_provision_last_success", node="n2")  # skipped: no result
    p = "clusterforge_pool_state"
    assert (
        value(fams, p, node="n1", state="admitted") == 1 and value(fams, p, node="n1", state="drained") == 0
    )
    assert value(fams, p, node="n2", state="drained") == 1
    assert value(fams, "clusterforge_pool_events", node="n1", action="drain") == 2 - 1
    assert fams["clusterforge_pool_events"].type == "counter"
    assert value(fams, "clusterforge_runs", cluster="lab", kind="certify", status="running") == 1
    assert value(fams, "clusterforge_run_last_success", cluster="lab", kind="provision") == 1
    assert value(fams, "clusterforge_run_last_duration_seconds", cluster="lab", kind="provision") == 1200


def test_burnin_outlier_scores(isolated: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "unit" / "burnin"))
    from burnin_data import plan_of, synthetic

    from clusterforge.records.burnin import BurninDB

    plan = plan_of("lab")
    nodes = [n["name"] for n in plan["nodes"]]
    rows = synthetic(plan, 3, factors={("ib-01", "gpu", "gpu0"): 0.6})
    path = isolated / "records.db"
    Store(path).close()
    with BurninDB(path) as bdb:
        bid = bdb.create("lab", nodes, iterations=3, duration_s=None, options={}, plan=plan)
        for it in (1, 2, 3):
            bdb.commit_iteration(bid, it, "r", "t", 1.0, [m for i, m in rows if i == it])
        bdb.finish(bid, "failed", {})
    fams = parse(render(collect(path)))
    b = "clusterforge_burnin_outlier_score"
    bad = value(fams, b, node="ib-01", test="nvbandwidth.h2d")
    good = value(fams, b, node="ib-02", test="nvbandwidth.h2d")
    assert bad < -3.5 < good


def test_unfinished_burnin_gives_no_scores(isolated: Path) -> None:
    path = isolated / "records.db"
    Store(path).close()
    fams = parse(render(collect(path)))
    assert fams["clusterforge_burnin_outlier_score"].samples == []


def test_textfile_is_atomic_and_node_filtered(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "textfile"
    r = CliRunner().invoke(app, ["exporter", "--textfile-dir", str(out), "--node", "n2", "--db", str(db)])
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in out.iterdir())
    assert files == [TEXTFILE]  # no temporary file left behind
    fams = parse((out / TEXTFILE).read_text())
    nodes = {s.labels["node"] for f in fams.values() for s in f.samples if "node" in s.labels}
    assert nodes == {"n2"}
    assert has(fams, "clusterforge_runs", cluster="lab")  # series without a node label stay


def test_write_textfile_replaces_the_old_file(tmp_path: Path) -> None:
    write_textfile(tmp_path, "old\n")
    write_textfile(tmp_path, "new\n")
    assert (tmp_path / TEXTFILE).read_text() == "new\n" and len(list(tmp_path.iterdir())) == 1


def test_http_exporter_serves_metrics(db: Path) -> None:
    srv = server("127.0.0.1:0", db)
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            fams = parse(resp.read().decode())
        assert value(fams, "clusterforge_pool_state", node="n2", state="drained") == 1
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
        assert e.value.code == 404
    finally:
        srv.shutdown()
        srv.server_close()


def test_http_exporter_reports_a_missing_database(tmp_path: Path) -> None:
    srv = server("127.0.0.1:0", tmp_path / "none.db")
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert e.value.code == 500
    finally:
        srv.shutdown()
        srv.server_close()


def test_cli_needs_one_destination(db: Path) -> None:
    from clusterforge.errors import ExitCode

    for argv in (
        ["exporter"],
        ["exporter", "--listen", "nope"],
        ["exporter", "--listen", ":1", "--node", "n1"],
    ):
        r = CliRunner().invoke(app, [*argv, "--db", str(db)])
        assert r.exception is not None and getattr(r.exception, "exit_code", None) == ExitCode.BAD_INPUT, argv


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    assert parse_listen(":9464") == ("0.0.0.0", 9464)


def test_exposition_escaping_and_values() -> None:
    f = Family("clusterforge_x", "gauge", "help with \\ and\nnewline")
    f.add(1.5, node='a"b\\c\nd')
    text = render([f])
    fams = parse(text)
    assert fams["clusterforge_x"].samples[0].labels == {"node": 'a"b\\c\nd'}
    assert (
        format_value(3.0) == "3"
        and format_value(float("nan")) == "NaN"
        and format_value(float("inf")) == "+Inf"
    )
    with pytest.raises(ValueError):
        Family("clusterforge_bad", "counter", "a counter must end in _total")
    with pytest.raises(ValueError):
        Family("bad-name", "gauge", "")
    dup = Family("clusterforge_y", "gauge", "")
    dup.add(1, node="a")
    dup.add(2, node="a")
    with pytest.raises(ValueError):
        render([dup])
