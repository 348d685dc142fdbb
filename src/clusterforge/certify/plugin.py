"""pytest plugin of the validators: turns every test outcome into a verdict and streams it out.

Verdicts: a test that returns is ``pass``; :class:`~clusterforge.certify.checks.CheckFailed` or any other
``AssertionError`` is ``fail``; :class:`~clusterforge.certify.checks.CheckError`, a fixture that cannot
set up, or any other exception is ``error`` (fail closed: a check that crashed never passes). Skipped
tests are ``skip`` (not applicable) and never count towards a pass.

With ``--cf-results PATH`` one JSON object per line is appended and flushed as each check ends, so a run
that is killed leaves what it did and no end marker (the runner then marks the node incomplete).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Fix, ToolMissing, Unreachable

TIERS = ("quick", "full", "burnin")
BMC = "bmc"
_WRITER = pytest.StashKey["_Writer | None"]()
_STARTED = pytest.StashKey[float]()


class _Writer:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("a", encoding="utf-8")

    def write(self, rec: dict[str, Any]) -> None:
        self.fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("clusterforge", "clusterforge certification")
    group.addoption(
        "--cf-results",
        dest="cf_results",
        default=None,
        help="append one JSON line per check result to this file",
    )


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: part of the {tier} certification tier")
    config.addinivalue_line(
        "markers",
        f"{BMC}: reads the node's BMC over Redfish with the BMC account: runs on the controller, never on "
        "the node (the node checker leaves it to the controller)",
    )
    path = config.getoption("cf_results", None)
    config.stash[_WRITER] = _Writer(Path(path)) if path else None


def pytest_collection_finish(session: pytest.Session) -> None:
    w = session.config.stash.get(_WRITER, None)
    if w is not None:
        nodes = sorted({node_of(i) for i in session.items})
        w.write(
            {
                "kind": "start",
                "collected": len(session.items),
                "nodes": nodes,
                "time": time.time(),
                "pid": os.getpid(),
            }
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    w = session.config.stash.get(_WRITER, None)
    if w is not None:
        w.write({"kind": "end", "exitstatus": int(exitstatus), "time": time.time()})
        w.close()
        session.config.stash[_WRITER] = None


def node_of(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "cf_node" in callspec.params:
        return str(callspec.params["cf_node"])
    return "-"


def check_id(item: pytest.Item) -> str:
    """``<area>.<check>[<param>]``: area from the module (test_gpu.py → gpu), check from the function."""
    module = Path(str(getattr(item, "fspath", item.nodeid.split("::")[0]))).stem
    area = module.removeprefix("test_")
    func = getattr(item, "originalname", None) or item.name.split("[")[0]
    cid = f"{area}.{func.removeprefix('test_')}"
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        extra = [
            f"{k}{v}" if k == "rail" else f"{k}={v}"
            for k, v in sorted(callspec.params.items())
            if k != "cf_node"
        ]
        if extra:
            cid += "[" + ",".join(extra) + "]"
    return cid


def classify(
    excinfo: pytest.ExceptionInfo[BaseException] | None, when: str, node: str = "-"
) -> dict[str, Any]:
    """Verdict and message of one phase's exception (None → pass). A missing tool or daemon is ``error``
    naming it and the role/tag that installs it (``missing``, ``fix``), never ``fail``."""
    if excinfo is None:
        return {"verdict": "pass", "message": ""}
    exc = excinfo.value
    if isinstance(exc, pytest.skip.Exception):
        return {"verdict": "skip", "message": str(getattr(exc, "msg", exc))}
    if isinstance(exc, CheckFailed) and when == "call":
        return {
            "verdict": "fail",
            "message": str(exc),
            "expected": exc.expected,
            "found": exc.found,
            "fix": exc.fix,
        }
    if isinstance(exc, AssertionError) and when == "call":
        return {"verdict": "fail", "message": str(exc).split("\n")[0] or "assertion failed"}
    if isinstance(exc, CheckError):
        rec: dict[str, Any] = {"verdict": "error", "message": str(exc)}
        if isinstance(exc, ToolMissing):
            rec["missing"] = exc.tool.name
            if exc.tool.role:
                rec["fix"] = Fix(exc.tool.role, exc.tool.tag).render(node)
        if isinstance(exc, Unreachable):
            rec["unreachable"] = True
        return rec
    where = "setting up the check" if when == "setup" else "running the check"
    return {"verdict": "error", "message": f"crashed {where}: {type(exc).__name__}: {exc}"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if call.when == "setup":
        item.stash[_STARTED] = time.time()
        if report.passed:
            return
    elif call.when != "call":
        return
    res = classify(call.excinfo, call.when, node_of(item))
    report.user_properties.append(("cf_verdict", res["verdict"]))
    w = item.config.stash.get(_WRITER, None)
    if w is None:
        return
    probe = getattr(item, "funcargs", {}).get("probe")
    evidence = probe.take_evidence() if probe is not None and hasattr(probe, "take_evidence") else {}
    tiers = [t for t in TIERS if item.get_closest_marker(t) is not None]
    w.write(
        {
            "kind": "check",
            "node": node_of(item),
            "check": check_id(item),
            "nodeid": item.nodeid,
            "tiers": tiers,
            "duration_s": round(report.duration, 3),
            "started": item.stash.get(_STARTED, time.time()),
            "evidence": evidence,
            **res,
        }
    )
