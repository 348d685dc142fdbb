"""Aggregation of check results into a node verdict, the JSON-lines reader (killed runs), JSON and JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from clusterforge.certify.results import read_results, summary, write_json, write_junit

from .conftest import node_result


def lines(path: Path, recs: list[dict[str, object]], torn: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + torn)
    return path


def check(cid: str, verdict: str, **kw: object) -> dict[str, object]:
    return {"kind": "check", "node": "n1", "check": cid, "verdict": verdict, "message": "", **kw}


def test_verdict_rules() -> None:
    assert node_result("n", {"a.x": "pass"}).verdict == "pass"
    assert node_result("n", {"a.x": "pass", "a.y": "fail", "a.z": "error"}).verdict == "fail"
    assert node_result("n", {"a.x": "pass", "a.z": "error"}).verdict == "error"
    incomplete = node_result("n", {"a.x": "pass"}, complete=False)
    assert incomplete.verdict == "error" and incomplete.status_word == "incomplete"
    empty = node_result("n", {})
    empty.checks = []
    assert empty.verdict == "error"  # nothing shown about the node is not a pass


def test_complete_run(tmp_path: Path) -> None:
    p = lines(
        tmp_path / "r.jsonl",
        [
            {"kind": "start", "collected": 2},
            check("gpu.count", "pass"),
            check("gpu.model", "fail", expected="H100", found="A100"),
            {"kind": "end", "exitstatus": 1},
        ],
    )
    r = read_results(p, "n1")
    assert r.complete and r.verdict == "fail" and r.reason() == "gpu.model"
    assert r.failed[0].expected == "H100"


def test_killed_run_is_incomplete_never_pass(tmp_path: Path) -> None:
    p = lines(
        tmp_path / "r.jsonl",
        [{"kind": "start", "collected": 3}, check("gpu.count", "pass"), check("gpu.model", "pass")],
        torn='{"kind": "check", "node": "n1", "ch',
    )
    r = read_results(p, "n1")
    assert not r.complete and r.verdict == "error" and "interrupted" in r.note
    assert len(r.checks) == 2


def test_ended_early_is_incomplete(tmp_path: Path) -> None:
    p = lines(
        tmp_path / "r.jsonl",
        [{"kind": "start", "collected": 3}, check("gpu.count", "pass"), {"kind": "end", "exitstatus": 2}],
    )
    assert read_results(p, "n1").verdict == "error"


def test_no_results_file(tmp_path: Path) -> None:
    r = read_results(tmp_path / "missing.jsonl", "n1")
    assert r.verdict == "error" and "no results" in r.note


def test_reports(tmp_path: Path) -> None:
    results = {
        "a": node_result("a", {"gpu.count": "pass"}),
        "b": node_result("b", {"gpu.count": "fail", "rdma.port[rail3]": "error"}),
        "c": node_result("c", {"gpu.count": "pass"}, complete=False),
    }
    assert summary(results) == {"pass": 1, "fail": 1, "error": 1}
    doc = json.loads(write_json(tmp_path / "r.json", {"run_id": "x"}, results).read_text())
    assert doc["summary"] == {"pass": 1, "fail": 1, "error": 1}
    assert [n["status"] for n in doc["nodes"]] == ["pass", "fail", "incomplete"]
    root = ET.parse(write_junit(tmp_path / "r.xml", "certify", results)).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert suites["b"].get("failures") == "1" and suites["b"].get("errors") == "1"
    b_cases = {c.get("name"): c for c in suites["b"].iter("testcase")}
    assert b_cases["gpu.count"].find("failure") is not None
    assert b_cases["rdma.port[rail3]"].find("error") is not None
    assert json.loads(b_cases["gpu.count"].find("failure").text or "{}")["fix"] == "run the role"
    assert any(
        c.get("name") == "certification.complete" and c.find("error") is not None
        for c in suites["c"].iter("testcase")
    )
