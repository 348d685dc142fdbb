"""bench/bench_fleet.py's pure helpers (no lab, no timing)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def fleet() -> Any:
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("cf_bench_fleet", REPO / "bench" / "bench_fleet.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _nodes(roce: int, ib: int) -> list[dict[str, str]]:
    return [{"name": f"roce-{i:02d}", "fabric_type": "roce"} for i in range(roce)] + [
        {"name": f"ib-{i:02d}", "fabric_type": "infiniband"} for i in range(ib)
    ]


def test_a_subset_is_half_of_each_fabric_in_plan_order(fleet: Any) -> None:
    nodes = _nodes(16, 16)
    four = fleet.subset(nodes, 4)
    assert four == ["roce-00", "roce-01", "ib-00", "ib-01"]
    assert len(fleet.subset(nodes, 32)) == 32 and len(set(fleet.subset(nodes, 16))) == 16
    odd = fleet.subset(nodes, 5)
    assert len(odd) == 5 and {n[:2] for n in odd} == {"ro", "ib"}


def test_the_larger_group_fills_in_when_one_runs_out(fleet: Any) -> None:
    assert fleet.subset(_nodes(1, 6), 5) == ["roce-00", "ib-00", "ib-01", "ib-02", "ib-03"]
    with pytest.raises(ValueError, match="the plan has 7"):
        fleet.subset(_nodes(1, 6), 8)


def test_results_say_what_came_back(fleet: Any) -> None:
    doc = {"items": [1], "errors": [], "deep": {"n1": "changed"}}
    assert fleet.drift_result(3, doc) == "rc 3; 1 items, 0 errors; check run on 1"
    cert = {"nodes": [{"verdict": "pass"}, {"verdict": "pass"}, {"verdict": "error"}]}
    assert fleet.certify_result(3, cert) == "rc 3; 1 error, 2 pass"
