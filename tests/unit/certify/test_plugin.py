"""The pytest plugin maps outcomes to verdicts (pass / fail / error), streams them as JSON lines with an
end marker, and a check that crashes or whose fixture breaks is `error`, never a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

MODULE = """
import pytest
from clusterforge.certify.checks import CheckError, CheckFailed, Unreachable

pytestmark = pytest.mark.quick

@pytest.fixture(params=["n1"])
def cf_node(request):
    return request.param

@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")

def test_ok(cf_node):
    pass

def test_wrong(cf_node):
    raise CheckFailed("governor", "performance", "powersave", "run the role")

def test_plain_assert(cf_node):
    assert 1 == 2, "one is not two"

def test_tool_hung(cf_node):
    raise CheckError("`nvidia-smi -q` hung")

def test_unreachable(cf_node):
    raise Unreachable("n1 unreachable over SSH")

def test_crash(cf_node):
    {}["missing"]

def test_setup_error(cf_node, broken):
    pass

@pytest.mark.parametrize("rail", [3])
def test_rail(cf_node, rail):
    pass
"""


def run(pytester: pytest.Pytester, tmp_path: Path) -> dict[str, dict[str, object]]:
    pytester.makepyfile(test_gpu=MODULE)
    out = tmp_path / "results.jsonl"
    pytester.runpytest("-p", "clusterforge.certify.plugin", "--cf-results", str(out), "-q")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kind"] == "start" and lines[0]["collected"] == 8
    assert lines[-1]["kind"] == "end"
    return {r["check"]: r for r in lines if r["kind"] == "check"}


def test_verdicts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    res = run(pytester, tmp_path)
    verdicts = {k: v["verdict"] for k, v in res.items()}
    assert verdicts == {
        "gpu.ok": "pass",
        "gpu.wrong": "fail",
        "gpu.plain_assert": "fail",
        "gpu.tool_hung": "error",
        "gpu.unreachable": "error",
        "gpu.crash": "error",
        "gpu.setup_error": "error",
        "gpu.rail[rail3]": "pass",
    }
    wrong = res["gpu.wrong"]
    assert (wrong["expected"], wrong["found"], wrong["fix"]) == ("performance", "powersave", "run the role")
    assert res["gpu.unreachable"]["unreachable"] is True
    assert "crashed running the check: KeyError" in str(res["gpu.crash"]["message"])
    assert "crashed setting up the check: RuntimeError: fixture exploded" in str(
        res["gpu.setup_error"]["message"]
    )
    assert all(r["node"] == "n1" and r["tiers"] == ["quick"] for r in res.values())


def test_without_results_option_nothing_is_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "clusterforge.certify.plugin", "-q")
    result.assert_outcomes(passed=1)
