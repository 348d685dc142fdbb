"""Alert rules and the Grafana dashboard: promtool parses and unit-tests the rules, every expression of the
dashboard parses, and every series named exists among clusterforge's, dcgm-exporter's and node-exporter's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.certify.xid import policy
from clusterforge.checks import by_id
from clusterforge.metrics.collect import collect
from clusterforge.records import Store
from tests.conftest import REAL, REPO

RULES = REPO / "monitoring" / "alerts" / "clusterforge.rules.yml"
RULE_TESTS = REPO / "monitoring" / "alerts" / "tests"
DASHBOARD = REPO / "monitoring" / "grafana" / "clusterforge-fleet.json"

# Fields that no captured file shows but that dcgm-exporter exports when its counters file names them
# (any DCGM field: the metric is named after the field). Source: NVIDIA/DCGM testing/python3/dcgm_fields.py
# (DCGM_FI_DEV_ROW_REMAP_PENDING = 396, "Whether remapping of rows is pending").
DCGM_EXTRA = {"DCGM_FI_DEV_ROW_REMAP_PENDING"}
# mlx5 per-priority PFC counters of `ethtool -S` (NVIDIA's mlx5 counters documentation: rx_prio[p]_pause,
# tx_prio[p]_pause), on the lossless priority 3 of the example clusters.
MLX5_PFC_STATS = {"rx_prio3_pause", "tx_prio3_pause"}


def promtool() -> str | None:
    return os.environ.get("PROMTOOL") or shutil.which("promtool")


def need_promtool() -> str:
    tool = promtool()
    if tool is None:
        print("promtool not found: install Debian's `prometheus` package (scripts/install-system-deps.sh)")
        pytest.skip("promtool not installed (Debian package `prometheus`; scripts/install-system-deps.sh)")
    return tool


def rules_doc() -> dict[str, Any]:
    return yaml.safe_load(RULES.read_text())


def alerts() -> list[dict[str, Any]]:
    return [r for g in rules_doc()["groups"] for r in g["rules"] if "alert" in r]


def dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    out = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    out += [v["query"]["query"] for v in doc["templating"]["list"] if isinstance(v.get("query"), dict)]
    return out


def grafana_to_promql(expr: str) -> str:
    """Grafana's variables replaced by values, so that a PromQL parser can read the expression."""
    expr = expr.replace("$__rate_interval", "5m").replace("$node", "n1")
    m = re.fullmatch(r"label_values\((\w+), *\w+\)", expr)
    return m.group(1) if m else expr


# --- series names in an expression --------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`|\d[\w.]*|[a-zA-Z_:][a-zA-Z0-9_:]*|\S')
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def series_names(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers outside label matchers, grouping lists, ranges and
    strings that are not followed by `(` or `by`/`without` (functions, aggregations) and are not keywords."""
    toks = _TOKEN.findall(expr)
    names: set[str] = set()
    depth_brace = 0
    skip_paren = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "[":  # range or subquery: durations only
            while i < len(toks) and toks[i] != "]":
                i += 1
        elif t == "{":
            depth_brace += 1
        elif t == "}":
            depth_brace -= 1
        elif depth_brace == 0 and t in _GROUPING:
            if i + 1 < len(toks) and toks[i + 1] == "(":
                skip_paren = 1
                i += 2
                while i < len(toks) and skip_paren:
                    skip_paren += {"(": 1, ")": -1}.get(toks[i], 0)
                    i += 1
                continue
        elif depth_brace == 0 and re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", t):
            follows = toks[i + 1] if i + 1 < len(toks) else ""
            if follows != "(" and follows not in _GROUPING and t.lower() not in _KEYWORDS:
                names.add(t)
        i += 1
    return names


def test_series_names_extraction() -> None:
    e = 'sum by (check, node) (rate(a_total{x="b c",y=~"d"}[5m])) / on(node) group_left(z) b offset 1h > 0'
    e += " and c"
    assert series_names(e) == {"a_total", "b", "c"}
    assert series_names("max_over_time((count by (instance) (m))[1d:5m])") == {"m"}


# --- the series that exist ----------------------------------------------------------------------------


def clusterforge_series(tmp_path: Path) -> set[str]:
    path = tmp_path / "records.db"
    Store(path).close()
    return {f.name for f in collect(path)}


def dcgm_series() -> set[str]:
    names = set(DCGM_EXTRA)
    for f in REAL.glob("dcgm-exporter-counters-csv__*"):
        for line in f.read_text().splitlines():
            m = re.match(r"^#?\s*(DCGM_FI_[A-Z0-9_]+)\s*,\s*(gauge|counter)", line)
            if m:
                names.add(m.group(1))
    for f in REAL.glob("dcgm-exporter-metrics__*"):
        names |= set(re.findall(r"^(DCGM_FI_[A-Z0-9_]+)\{", f.read_text(), re.M))
    return names


def ethtool_metric(stat: str) -> str:
    """node-exporter's ethtool collector name for an `ethtool -S` stat (collector/ethtool_linux.go
    buildEthtoolFQName: sanitised, lower case, `rx`/`tx` words → received/transmitted)."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", stat).lower().lstrip("_")
    name = re.sub(r"(^|_)rx(_|$)", r"\1received\2", name)
    name = re.sub(r"(^|_)tx(_|$)", r"\1transmitted\2", name)
    return "node_ethtool_" + name


def node_series() -> set[str]:
    names: set[str] = set()
    for f in REAL.glob("node-exporter-metrics__*"):
        names |= set(re.findall(r"^(node_[a-z0-9_]+)[{ ]", f.read_text(), re.M))
    stats = set(MLX5_PFC_STATS)
    for f in REAL.glob("ethtool-S__*"):
        stats |= set(re.findall(r"^\s+([A-Za-z0-9_]+): \d+$", f.read_text(), re.M))
    return names | {ethtool_metric(s) for s in stats}


def health_series() -> set[str]:
    """The series the node-side health check writes (its textfile, as it renders it)."""
    from clusterforge.health import nodecheck

    text = nodecheck.metrics("n1", nodecheck.Result(), [], 0.01, 0.0)
    return set(re.findall(r"^(clusterforge_[a-z_]+)\{", text, re.M))


@pytest.fixture
def known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return clusterforge_series(tmp_path) | dcgm_series() | node_series() | health_series()


def test_known_series_sources_are_real() -> None:
    dcgm = dcgm_series()
    assert {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_GPU_TEMP"} <= dcgm
    node = node_series()
    assert {"node_infiniband_state_id", "node_network_carrier_changes_total", "node_network_up"} <= node
    assert "node_ethtool_transmitted_pause_storm_error_events" in node  # from a real mlx5 capture
    assert ethtool_metric("rx_prio3_pause") == "node_ethtool_received_prio3_pause"


def test_rules_name_only_existing_series(known: set[str]) -> None:
    unknown = {a["alert"]: sorted(series_names(a["expr"]) - known) for a in alerts()}
    assert {k: v for k, v in unknown.items() if v} == {}


def test_dashboard_names_only_existing_series(known: set[str]) -> None:
    unknown = {e: sorted(series_names(grafana_to_promql(e)) - known) for e in dashboard_exprs()}
    assert {k: v for k, v in unknown.items() if v} == {}
    assert any("$node" in e for e in dashboard_exprs())  # the drill-down uses the node variable


def test_series_check_catches_a_typo(known: set[str]) -> None:
    assert series_names("DCGM_FI_DEV_XID_ERROR > 0") - known == {"DCGM_FI_DEV_XID_ERROR"}


# --- rules and registry, rules and the Xid policy ---------------------------------------------------------


def test_alert_checks_are_registry_ids() -> None:
    for a in alerts():
        check = a.get("labels", {}).get("check")
        if check is not None:
            assert check in by_id(), a["alert"]


def _xids(expr: str) -> set[int]:
    return {int(x) for x in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", expr)}


def test_xid_alerts_follow_the_policy() -> None:
    pol = policy()
    by_name = {a["alert"]: a["expr"] for a in alerts()}
    assert _xids(by_name["GpuXidWarn"]) == set(pol.of_class("warn"))
    assert _xids(by_name["GpuXidApplication"]) == set(pol.of_class("application"))
    # fatal: every Xid but warn, application and 79 (which has its own alert)
    assert _xids(by_name["GpuXidFatal"]) == set(pol.of_class("warn")) | set(pol.of_class("application")) | {
        79
    }
    assert pol.classify_code(79) == "fatal" and pol.default == "fatal"


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases: dict[str, set[bool]] = {}
    for f in RULE_TESTS.glob("*.yml"):
        for t in yaml.safe_load(f.read_text())["tests"]:
            for c in t.get("alert_rule_test", []):
                cases.setdefault(c["alertname"], set()).add(bool(c.get("exp_alerts")))
    missing = {a["alert"]: cases.get(a["alert"], set()) for a in alerts()}
    assert {k: v for k, v in missing.items() if v != {True, False}} == {}


# --- promtool ----------------------------------------------------------------------------------------------


def test_promtool_check_rules() -> None:
    tool = need_promtool()
    r = subprocess.run([tool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_promtool_test_rules() -> None:
    tool = need_promtool()
    files = sorted(str(p.name) for p in RULE_TESTS.glob("*.yml"))
    r = subprocess.run(
        [tool, "test", "rules", *files], cwd=RULE_TESTS, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_dashboard_exprs_parse(tmp_path: Path) -> None:
    """Every dashboard query as a recording rule of a throwaway rules file, through `promtool check rules`."""
    tool = need_promtool()
    rules = [
        {"record": f"dashboard:expr_{i}", "expr": grafana_to_promql(e)}
        for i, e in enumerate(dashboard_exprs())
    ]
    f = tmp_path / "dashboard.rules.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    r = subprocess.run([tool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bad.rules.yml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum(("}]}]}))
    assert subprocess.run([tool, "check", "rules", str(bad)], capture_output=True, timeout=60).returncode != 0


def test_dashboard_shape() -> None:
    doc = json.loads(DASHBOARD.read_text())
    assert doc["uid"] == "clusterforge-fleet"
    assert [v["name"] for v in doc["templating"]["list"]] == ["datasource", "node"]
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
