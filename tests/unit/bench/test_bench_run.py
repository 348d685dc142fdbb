"""Pure helpers of bench/run.py and the naive runner env (no timing assertions, no lab)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

import pytest

from clusterforge.run import ansible
from clusterforge.run.naive import NAIVE_REMOVED, naive_env, naive_runner
from tests.conftest import REPO

RUN_PY = REPO / "bench" / "run.py"


@pytest.fixture(scope="module")
def bench() -> object:
    spec = importlib.util.spec_from_file_location("cf_bench_run", RUN_PY)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cf_bench_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_per_node_and_row(bench: object) -> None:
    assert bench.per_node(10.0, 4) == 2.5  # type: ignore[attr-defined]
    assert bench.per_node(None, 4) is None  # type: ignore[attr-defined]
    assert bench.per_node(1.0, 0) is None  # type: ignore[attr-defined]
    r = bench.row("provision", "no-op tuned", 4, 12.3456, note="x")  # type: ignore[attr-defined]
    assert r == {
        "stage": "provision",
        "variant": "no-op tuned",
        "nodes": 4,
        "seconds": 12.346,
        "per_node_s": 3.0864,
        "note": "x",
    }


def test_ratio(bench: object) -> None:
    assert bench.ratio(30.0, 10.0) == 3.0  # type: ignore[attr-defined]
    assert bench.ratio(None, 10.0) is None  # type: ignore[attr-defined]
    assert bench.ratio(3.0, 0.0) is None  # type: ignore[attr-defined]


def test_ratios_pair_variants_at_the_same_size(bench: object) -> None:
    rows = [
        bench.row("provision", "no-op tuned", 4, 10.0),  # type: ignore[attr-defined]
        bench.row("provision", "no-op naive", 4, 25.0),  # type: ignore[attr-defined]
        bench.row("provision", "no-op naive", 16, 80.0),  # no tuned run at 16: no ratio  # type: ignore[attr-defined]
        bench.row("certify", "validators", 4, 8.0),  # type: ignore[attr-defined]
        bench.row("certify", "validators no-mux", 4, 12.0),  # type: ignore[attr-defined]
    ]
    rs = bench.ratios(rows)  # type: ignore[attr-defined]
    assert [(r["nodes"], r["ratio"]) for r in rs] == [(4, 2.5), (4, 1.5)]
    assert rs[0]["slow_s"] == 25.0 and rs[0]["fast_s"] == 10.0


def test_render_table(bench: object) -> None:
    rows = [
        bench.row("plan", "100k GPUs", 12500, 3.73, note="a|b"),  # type: ignore[attr-defined]
        bench.row("lab down", "", 4, None),  # type: ignore[attr-defined]
    ]
    text = bench.render_table(rows)  # type: ignore[attr-defined]
    lines = text.splitlines()
    assert lines[0] == "| stage | variant | nodes | seconds | s/node | note |"
    assert lines[2] == "| plan | 100k GPUs | 12,500 | 3.73 | 0.000298 | a\\|b |"
    assert lines[3] == "| lab down |  | 4 | — | — |  |"


def test_render_ratios(bench: object) -> None:
    assert "no comparison" in bench.render_ratios([])  # type: ignore[attr-defined]
    text = bench.render_ratios(  # type: ignore[attr-defined]
        [{"comparison": "c", "nodes": 4, "slow_s": 25.0, "fast_s": 10.0, "ratio": 2.5}]
    )
    assert text.splitlines()[-1] == "| c | 4 | 25.00 | 10.00 | 2.50× |"


def test_bench_spec_resizes_the_lab_spec(bench: object) -> None:
    base = {
        "metadata": {"name": "lab"},
        "pools": [{"name": "roce", "count": 2}, {"name": "ib", "count": 2}],
        "site": {"racks": {"count": 1, "nodes_per_rack": 4}},
        "rollout": {"serial": 2},
    }
    s = bench.bench_spec(base, 17)  # type: ignore[attr-defined]
    assert s["metadata"]["name"] == "bench"
    assert [p["count"] for p in s["pools"]] == [9, 8]
    assert s["site"]["racks"]["count"] == 5
    assert s["rollout"]["serial"] == 17
    assert base["pools"][0]["count"] == 2  # the base is not modified


def _args(**kw: object) -> argparse.Namespace:
    d: dict[str, object] = {
        "stages": None,
        "quick": False,
        "full": False,
        "plan_cases": None,
        "lab_sizes": None,
        "provision_sizes": None,
        "certify_sizes": None,
        "drift_sizes": None,
    }
    d.update(kw)
    return argparse.Namespace(**d)


def test_plan_for_modes(bench: object) -> None:
    default = bench.plan_for(_args())  # type: ignore[attr-defined]
    assert default["plan"] == ["1k", "10k", "100k"] and default["lab"] == [4, 16]
    assert default["provision"] == [4] and default["certify"] == [4, 16] and default["drift"] == [4]
    full = bench.plan_for(_args(full=True))  # type: ignore[attr-defined]
    assert full["lab"] == [4, 16, 32] and full["provision"] == [4, 16] and full["certify"] == [4, 16, 32]
    quick = bench.plan_for(_args(quick=True, stages=["plan"]))  # type: ignore[attr-defined]
    assert quick["plan"] == ["1k", "10k"] and quick["lab"] == [] and quick["drift"] == []
    assert bench.lab_sessions(full) == [4, 16, 32]  # type: ignore[attr-defined]


def test_naive_env_is_ansible_defaults() -> None:
    env = naive_env(forks=64)
    assert env["ANSIBLE_FORKS"] == "5"
    assert env["ANSIBLE_PIPELINING"] == "False"
    assert "ControlPersist" not in env["ANSIBLE_SSH_ARGS"] and "ControlMaster=no" in env["ANSIBLE_SSH_ARGS"]
    assert env["ANSIBLE_GATHERING"] == "implicit" and env["ANSIBLE_CACHE_PLUGIN"] == "memory"
    assert not set(NAIVE_REMOVED) & set(env)
    tuned = ansible.runner_env()
    # the rest of the environment (PATH, collections, roles, config) is the tuned one
    for key in ("PATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_ROLES_PATH", "ANSIBLE_HOST_KEY_CHECKING"):
        assert env[key] == tuned[key]


def test_naive_runner_swaps_and_restores() -> None:
    tuned = ansible.runner_env
    with naive_runner():
        assert ansible.runner_env(32)["ANSIBLE_PIPELINING"] == "False"
    assert ansible.runner_env is tuned
    with pytest.raises(RuntimeError), naive_runner():
        raise RuntimeError
    assert ansible.runner_env is tuned
    assert ansible.runner_env(32)["ANSIBLE_FORKS"] == "32"


def test_naive_sizes_pick_the_provision_sizes_that_also_run_naive(bench: object) -> None:
    every = bench.plan_for(_args(provision_sizes=[4, 16]))  # type: ignore[attr-defined]
    assert "naive" not in every  # default: the naive no-op runs at every provision size
    some = bench.plan_for(_args(provision_sizes=[4, 16], naive_sizes=[4, 32]))  # type: ignore[attr-defined]
    assert some["naive"] == [4]  # 32 is not provisioned: no naive run there
    none = bench.plan_for(_args(provision_sizes=[16], naive_sizes=[]))  # type: ignore[attr-defined]
    assert none["naive"] == []
