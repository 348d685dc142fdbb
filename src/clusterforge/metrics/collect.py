"""clusterforge's own metrics, computed from the records database (opened read-only; nothing is written).

What counts is what the records count: runs that finished on their own (`passed`/`failed`); a running,
incomplete or errored run never shows. Labels are bounded: `node` (the fleet), `tier` (quick/full/burnin),
`check` (registry ids, parameters folded: `rdma.port[rail3]` → `rdma.port`), `test` (burn-in tests),
`verdict`/`status`/`state`/`action` (small fixed sets), `cluster`.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from clusterforge.checks.registry import base_id
from clusterforge.metrics.exposition import Family
from clusterforge.records._util import default_db_path, parse_iso, utcnow
from clusterforge.records.model import RecordsError, SchemaTooNew
from clusterforge.records.schema import CURRENT_VERSION, POOL_ACTIONS, VERDICTS

COUNTED = ("passed", "failed")
TIERED_KINDS = ("certify", "burnin")
POOL_STATES = ("admitted", "drained", "held")
_STATE_OF = {
    "admit": "admitted",
    "resume": "admitted",
    "override": "admitted",
    "drain": "drained",
    "hold": "held",
}
PREFIX = "clusterforge_"


@dataclass(frozen=True)
class Row:
    node: str
    kind: str
    tier: str
    verdict: str
    at: str
    run_id: str
    duration_s: float | None


def open_readonly(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise RecordsError(f"{path}: no such records database")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA busy_timeout = 30000")
    has = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
    version = int(db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0) if has else 0
    if version > CURRENT_VERSION:
        db.close()
        raise SchemaTooNew(
            f"{path}: records schema {version}, this clusterforge knows up to {CURRENT_VERSION}"
        )
    if version < CURRENT_VERSION:
        db.close()
        raise RecordsError(
            f"{path}: records schema {version}; open it once with a clusterforge command to migrate"
        )
    return db


def ts(text: str) -> float:
    return parse_iso(text).timestamp()


def _latest_node_rows(db: sqlite3.Connection) -> dict[tuple[str, str, str], Row]:
    """Newest node result per (node, kind, tier) among finished runs."""
    rows = db.execute(
        "SELECT n.node, n.verdict, n.duration_s, n.recorded_at, r.kind, COALESCE(r.tier, r.kind) AS tier,"
        " r.id FROM node_results n JOIN runs r ON r.id = n.run_id"
        f" WHERE r.status IN {COUNTED} ORDER BY n.recorded_at, r.id"
    ).fetchall()
    out: dict[tuple[str, str, str], Row] = {}
    for r in rows:
        out[(r["node"], r["kind"], r["tier"])] = Row(
            r["node"], r["kind"], r["tier"], r["verdict"], r["recorded_at"], r["id"], r["duration_s"]
        )
    return out


def _worst(statuses: Iterable[str]) -> str:
    s = set(statuses)
    return "fail" if "fail" in s else "error" if "error" in s else "pass"


def _latest_outcomes(db: sqlite3.Connection) -> dict[tuple[str, str], sqlite3.Row]:
    """Newest node outcome per (node, kind) among finished provision and drift runs: a provision in check
    mode changed nothing, a host it skipped has no result, and a drift run that could not check a node
    (unreachable, error) says nothing of its settings."""
    rows = db.execute(
        "SELECT o.node, o.outcome, o.changed, o.duration_s, o.recorded_at, r.kind FROM run_nodes o"
        f" JOIN runs r ON r.id = o.run_id WHERE r.status IN {COUNTED}"
        " AND ((r.kind = 'provision' AND COALESCE(r.tier, '') != 'check' AND o.outcome != 'skipped')"
        " OR (r.kind = 'drift' AND o.outcome IN ('ok', 'drifted')))"
        " ORDER BY o.recorded_at, r.id"
    ).fetchall()
    return {(r["node"], r["kind"]): r for r in rows}


def verdict_families(db: sqlite3.Connection) -> list[Family]:
    latest = _latest_node_rows(db)
    verdict = Family(
        PREFIX + "node_verdict",
        "gauge",
        "1 for the node's verdict in its newest finished run of the tier (certify/burn-in), 0 for the others",
    )
    verdict_ts = Family(
        PREFIX + "node_verdict_timestamp_seconds", "gauge", "When that verdict was recorded (Unix time)"
    )
    drift = Family(
        PREFIX + "drift_items",
        "gauge",
        "Settings found different from the declared state in the node's newest finished drift run",
    )
    prov_ok = Family(
        PREFIX + "provision_last_success", "gauge", "1 when the node's newest finished provision passed"
    )
    prov_dur = Family(
        PREFIX + "provision_last_duration_seconds",
        "gauge",
        "Duration of the node's newest finished provision",
    )
    prov_ts = Family(
        PREFIX + "provision_last_timestamp_seconds",
        "gauge",
        "When the node's newest provision result was recorded",
    )
    for (node, kind, tier), r in sorted(latest.items()):
        if kind in TIERED_KINDS:
            for v in VERDICTS:
                verdict.add(1 if r.verdict == v else 0, node=node, tier=tier, verdict=v)
            verdict_ts.add(ts(r.at), node=node, tier=tier)
    for (node, kind), o in sorted(_latest_outcomes(db).items()):
        if kind == "drift":
            drift.add(int(o["changed"]), node=node)
            continue
        prov_ok.add(1 if o["outcome"] in ("ok", "changed") else 0, node=node)
        prov_ts.add(ts(o["recorded_at"]), node=node)
        if o["duration_s"] is not None:
            prov_dur.add(float(o["duration_s"]), node=node)
    return [verdict, verdict_ts, drift, prov_ok, prov_dur, prov_ts]


def check_families(db: sqlite3.Connection) -> list[Family]:
    """Each check's newest result per node, parameters folded (the worst of a check's rails/cases)."""
    rows = db.execute(
        "SELECT c.node, c.check_id, c.status, c.run_id, c.recorded_at FROM check_results c"
        " JOIN runs r ON r.id = c.run_id"
        f" WHERE r.status IN {COUNTED} AND r.kind IN {TIERED_KINDS} AND c.attempt ="
        " (SELECT MAX(attempt) FROM check_results c2 WHERE c2.run_id = c.run_id AND c2.node = c.node"
        " AND c2.check_id = c.check_id) ORDER BY c.recorded_at, c.run_id"
    ).fetchall()
    newest: dict[tuple[str, str], tuple[str, str]] = {}  # (node, check) -> (recorded_at, run_id)
    statuses: dict[tuple[str, str, str], list[str]] = defaultdict(list)  # (node, check, run) -> statuses
    for r in rows:
        key = (r["node"], base_id(r["check_id"]))
        newest[key] = (r["recorded_at"], r["run_id"])
        statuses[(*key, r["run_id"])].append(r["status"])
    fam = Family(
        PREFIX + "check_status",
        "gauge",
        "1 for the status of the check's newest result on the node (pass/fail/error), 0 for the others",
    )
    at = Family(PREFIX + "check_timestamp_seconds", "gauge", "When the check's newest result was recorded")
    for (node, check), (when, run_id) in sorted(newest.items()):
        worst = _worst(statuses[(node, check, run_id)])
        for s in VERDICTS:
            fam.add(1 if s == worst else 0, node=node, check=check, status=s)
        at.add(ts(when), node=node, check=check)
    return [fam, at]


def certificate_families(db: sqlite3.Connection, now: datetime) -> list[Family]:
    rows = db.execute(
        "SELECT c.node, c.tier, c.verdict, c.issued_at, c.valid_until FROM certificates c"
        " JOIN runs r ON r.id = c.run_id"
        f" WHERE r.status IN {COUNTED} AND EXISTS"
        " (SELECT 1 FROM node_results n WHERE n.run_id = c.run_id AND n.node = c.node)"
        " ORDER BY c.issued_at, c.recorded_at"
    ).fetchall()
    newest = {(r["node"], r["tier"]): r for r in rows}
    expiry = Family(
        PREFIX + "certificate_expiry_timestamp_seconds",
        "gauge",
        "valid_until of the node's newest certificate",
    )
    issued = Family(
        PREFIX + "certificate_issued_timestamp_seconds", "gauge", "issued_at of the node's newest certificate"
    )
    certified = Family(
        PREFIX + "node_certified",
        "gauge",
        "1 when the node's newest certificate of the tier passed and has not expired",
    )
    for (node, tier), r in sorted(newest.items()):
        until = ts(r["valid_until"])
        expiry.add(until, node=node, tier=tier)
        issued.add(ts(r["issued_at"]), node=node, tier=tier)
        certified.add(1 if r["verdict"] == "pass" and until > now.timestamp() else 0, node=node, tier=tier)
    return [expiry, issued, certified]


def pool_families(db: sqlite3.Connection) -> list[Family]:
    rows = db.execute("SELECT node, action, at FROM pool_events ORDER BY at, id").fetchall()
    last: dict[str, str] = {}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        last[r["node"]] = r["action"]
        counts[(r["node"], r["action"])] += 1
    state = Family(
        PREFIX + "pool_state",
        "gauge",
        "1 for the node's pool state after clusterforge's newest pool action (admitted/drained/held)",
    )
    for node, action in sorted(last.items()):
        for s in POOL_STATES:
            state.add(1 if _STATE_OF[action] == s else 0, node=node, state=s)
    events = Family(PREFIX + "pool_events_total", "counter", "Pool actions clusterforge recorded on the node")
    for node in sorted(last):
        for a in POOL_ACTIONS:
            events.add(counts.get((node, a), 0), node=node, action=a)
    return [state, events]


def run_families(db: sqlite3.Connection) -> list[Family]:
    runs = Family(PREFIX + "runs_total", "counter", "Runs recorded, by kind and final status")
    for r in db.execute(
        "SELECT cluster, kind, status, COUNT(*) AS n FROM runs GROUP BY cluster, kind, status"
    ):
        runs.add(r["n"], cluster=r["cluster"], kind=r["kind"], status=r["status"])
    last = Family(
        PREFIX + "run_last_success",
        "gauge",
        "1 when the newest finished run of the kind passed (per cluster; a provision in check mode is "
        "not one)",
    )
    dur = Family(
        PREFIX + "run_last_duration_seconds", "gauge", "Duration of the newest finished run of the kind"
    )
    newest: dict[tuple[str, str], sqlite3.Row] = {}
    for r in db.execute(
        "SELECT cluster, kind, status, started_at, ended_at FROM runs"
        " WHERE status IN ('passed','failed','error') AND ended_at IS NOT NULL"
        " AND NOT (kind = 'provision' AND COALESCE(tier, '') = 'check') ORDER BY ended_at, id"
    ):
        newest[(r["cluster"], r["kind"])] = r
    for (cluster, kind), r in sorted(newest.items()):
        last.add(1 if r["status"] == "passed" else 0, cluster=cluster, kind=kind)
        dur.add(ts(r["ended_at"]) - ts(r["started_at"]), cluster=cluster, kind=kind)
    return [runs, last, dur]


def burnin_families(db: sqlite3.Connection) -> list[Family]:
    """Robust z-score of each node's worst unit per burn-in test, from the newest finished burn-in."""
    fam = Family(
        PREFIX + "burnin_outlier_score",
        "gauge",
        "Lowest robust z-score among the node's units for the test in the newest finished burn-in "
        "(negative: below the fleet median; the analysis flags below -z_max)",
    )
    has = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='burnin_runs'").fetchone()
    if not has:
        return [fam]
    run = db.execute(
        "SELECT * FROM burnin_runs WHERE status IN ('passed','failed') ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()
    if run is None:
        return [fam]
    for (node, test), z in sorted(_burnin_scores(db, run).items()):
        fam.add(z, node=node, test=test)
    return [fam]


def _burnin_scores(db: sqlite3.Connection, run: sqlite3.Row) -> dict[tuple[str, str], float]:
    from clusterforge.burnin import issue, pairs
    from clusterforge.burnin.analysis import AnalysisConfig
    from clusterforge.burnin.model import PERF_TESTS
    from clusterforge.burnin.verdicts import evaluate
    from clusterforge.records.burnin import MEASUREMENTS_SQL, measurements

    rows = measurements(db.execute(MEASUREMENTS_SQL, (run["id"],)))
    plan: dict[str, Any] = json.loads(run["plan"] or "{}")
    nodes: list[str] = json.loads(run["nodes"])
    options: dict[str, Any] = json.loads(run["options"] or "{}")
    cfg = AnalysisConfig.from_dict(options.get("analysis") or {})
    ev = evaluate(rows, plan, nodes, pairs.select_pairs(plan, nodes), cfg, issue.serials(rows))
    out: dict[tuple[str, str], float] = {}
    for (test, node, _comp, _peer), s in ev.units.items():
        if test not in PERF_TESTS or node not in nodes or s.z is None:
            continue
        key = (node, test)
        out[key] = min(out.get(key, s.z), s.z)
    return out


def collect(path: Path | None = None, now: datetime | None = None) -> list[Family]:
    """Every clusterforge_* family from the records database at `path` (default: the default database)."""
    db = open_readonly(Path(path) if path is not None else default_db_path())
    try:
        now = now or utcnow()
        fams = verdict_families(db) + check_families(db) + certificate_families(db, now)
        fams += pool_families(db) + run_families(db) + burnin_families(db)
    finally:
        db.close()
    return fams
