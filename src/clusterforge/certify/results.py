"""Check results, their aggregation into a node verdict, and the JSON / JUnit XML reports."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERDICTS = ("pass", "fail", "error")


@dataclass
class CheckResult:
    node: str
    check_id: str
    status: str  # pass | fail | error | skip
    message: str = ""
    expected: str | None = None
    found: str | None = None
    fix: str | None = None
    duration_s: float = 0.0
    tiers: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    unreachable: bool = False

    @property
    def verdict(self) -> str:
        return self.status

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> CheckResult:
        return cls(
            node=rec["node"],
            check_id=rec["check"],
            status=rec["verdict"],
            message=rec.get("message", ""),
            expected=rec.get("expected"),
            found=rec.get("found"),
            fix=rec.get("fix"),
            duration_s=float(rec.get("duration_s", 0.0)),
            tiers=list(rec.get("tiers", [])),
            evidence=rec.get("evidence") or {},
            unreachable=bool(rec.get("unreachable")),
        )


@dataclass
class NodeResult:
    node: str
    checks: list[CheckResult] = field(default_factory=list)
    complete: bool = False  # the validator run reached its end marker with every collected check
    unreachable: bool = False
    note: str = ""  # why the run is incomplete / errored, when it is
    seconds: float = 0.0
    collected: int = 0

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def errored(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "error"]

    @property
    def verdict(self) -> str:
        """``pass`` only when the run completed, something ran, and every check passed (or did not apply)."""
        if self.unreachable:
            return "error"
        if self.failed:
            return "fail"
        if self.errored or not self.complete or not any(c.status == "pass" for c in self.checks):
            return "error"
        return "pass"

    @property
    def status_word(self) -> str:
        if self.unreachable:
            return "unreachable"
        if not self.complete and not self.failed:
            return "incomplete"
        return self.verdict

    def reason(self, limit: int = 6) -> str:
        """Short machine-parseable summary for a drain reason: the failed, then errored, check ids."""
        if self.unreachable:
            return "unreachable"
        bad = [c.check_id for c in self.failed] + [f"{c.check_id}(error)" for c in self.errored]
        if not bad:
            return self.note or ("incomplete" if not self.complete else "")
        more = f" +{len(bad) - limit}" if len(bad) > limit else ""
        return ",".join(bad[:limit]) + more

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "verdict": self.verdict,
            "status": self.status_word,
            "complete": self.complete,
            "unreachable": self.unreachable,
            "note": self.note,
            "seconds": round(self.seconds, 3),
            "collected": self.collected,
            "counts": {v: sum(1 for c in self.checks if c.status == v) for v in (*VERDICTS, "skip")},
            "checks": [asdict(c) for c in self.checks],
        }


def read_results(path: Path, node: str) -> NodeResult:
    """One node's result from the plugin's JSON-lines stream (tolerates a torn last line of a killed run)."""
    res = NodeResult(node)
    if not path.exists():
        res.note = "the validator run produced no results"
        return res
    ended = False
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = rec.get("kind")
        if kind == "start":
            res.collected = int(rec.get("collected", 0))
        elif kind == "end":
            ended = True
        elif kind == "check" and rec.get("node") in (node, "-"):
            rec["node"] = node
            res.checks.append(CheckResult.from_record(rec))
    res.unreachable = any(c.unreachable for c in res.checks)
    res.complete = ended and res.collected > 0 and len(res.checks) >= res.collected
    if not res.complete and not res.note:
        res.note = (
            "incomplete: the validator run ended early"
            if ended
            else "incomplete: the validator run was interrupted"
        )
    return res


def summary(results: dict[str, NodeResult]) -> dict[str, int]:
    out = {v: 0 for v in VERDICTS}
    for r in results.values():
        out[r.verdict] += 1
    return out


def json_text(meta: dict[str, Any], results: dict[str, NodeResult]) -> str:
    doc = {**meta, "summary": summary(results), "nodes": [r.as_dict() for r in results.values()]}
    return json.dumps(doc, indent=2, sort_keys=True, default=str)


def write_json(path: Path, meta: dict[str, Any], results: dict[str, NodeResult]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json_text(meta, results))
    return path


def junit_text(name: str, results: dict[str, NodeResult]) -> str:
    """The JUnit XML of `write_junit`, as text."""
    return ET.tostring(_junit(name, results), encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, name: str, results: dict[str, NodeResult]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(_junit(name, results)).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _junit(name: str, results: dict[str, NodeResult]) -> ET.Element:
    """One <testsuite> per node, one <testcase> per check; ``fail`` → <failure>, ``error`` → <error>."""
    suites = ET.Element("testsuites", name=name)
    for r in results.values():
        checks = list(r.checks)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=r.node,
            tests=str(len(checks) + (0 if r.complete else 1)),
            failures=str(len(r.failed)),
            errors=str(len(r.errored) + (0 if r.complete else 1)),
            skipped=str(sum(1 for c in checks if c.status == "skip")),
            time=f"{r.seconds:.3f}",
        )
        for c in checks:
            case = ET.SubElement(
                suite, "testcase", classname=r.node, name=c.check_id, time=f"{c.duration_s:.3f}"
            )
            if c.status in ("fail", "error"):
                el = ET.SubElement(
                    case, "failure" if c.status == "fail" else "error", message=c.message[:1000]
                )
                el.text = json.dumps(
                    {"expected": c.expected, "found": c.found, "fix": c.fix, "evidence": c.evidence},
                    indent=1,
                    default=str,
                )[:20000]
            elif c.status == "skip":
                ET.SubElement(case, "skipped", message=c.message[:1000])
        if not r.complete:
            case = ET.SubElement(suite, "testcase", classname=r.node, name="certification.complete", time="0")
            ET.SubElement(case, "error", message=r.note or r.status_word)
    return suites
