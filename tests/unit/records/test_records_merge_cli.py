"""`clusterforge records merge`: the shards' records databases folded into one, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.records import CheckResult, Store


def _shard(path: Path, node: str, verdict: str) -> str:
    with Store(path) as s:
        rid = s.start_run("certify", "lab", tier="quick", nodes=[node])
        s.add_check_result(rid, CheckResult(node=node, check_id="gpu.ecc", status=verdict))
        s.add_node_result(rid, node, verdict, expectation_digest="d" * 64)
        s.finish_run(rid, "passed" if verdict == "pass" else "failed")
        return rid


@pytest.fixture
def shards(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for i, (node, verdict) in enumerate((("n1", "pass"), ("n2", "fail")), start=1):
        out[node] = tmp_path / f"shard-{i}.db"
        _shard(out[node], node, verdict)
    return out


def test_merge_brings_every_shard_into_one_database(tmp_path: Path, shards: dict[str, Path]) -> None:
    target = tmp_path / "all.db"
    res = CliRunner().invoke(app, ["records", "merge", *map(str, shards.values()), "--db", str(target)])
    assert res.exit_code == 0, res.output
    assert res.output.count("merged ") == 2
    with Store(target) as store:
        runs = store.runs()
        assert len(runs) == 2
        assert {r.status for r in runs} == {"passed", "failed"}
    again = CliRunner().invoke(
        app, ["records", "merge", *map(str, shards.values()), "--db", str(target), "--json"]
    )
    assert again.exit_code == 0, again.output
    added = json.loads(again.output)["added"]
    assert all(not any(counts.values()) for counts in added.values())  # merging twice adds nothing


def test_merge_defaults_to_the_clusterforge_db(
    tmp_path: Path, shards: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "env.db"))
    res = CliRunner().invoke(app, ["records", "merge", str(shards["n1"])])
    assert res.exit_code == 0, res.output
    with Store(tmp_path / "env.db") as store:
        assert len(store.runs()) == 1


def test_a_bad_shard_list_merges_nothing(tmp_path: Path, shards: dict[str, Path]) -> None:
    target = tmp_path / "all.db"
    missing = tmp_path / "shard-3.db"
    res = CliRunner().invoke(app, ["records", "merge", str(shards["n1"]), str(missing), "--db", str(target)])
    assert res.exit_code == 2
    assert f"{missing}: no such records database" in res.output and "nothing merged" in res.output
    assert not target.exists()  # the good shard was not merged either
    itself = CliRunner().invoke(app, ["records", "merge", str(shards["n1"]), "--db", str(shards["n1"])])
    assert itself.exit_code == 2 and "is the database merged into" in itself.output
