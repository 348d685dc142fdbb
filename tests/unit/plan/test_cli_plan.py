"""`clusterforge plan --format json` on the example specs; bad input -> exit 2, no traceback, none written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from tests.conftest import CLUSTERS

MAIN = "import sys; from clusterforge.cli import main; sys.argv = ['clusterforge', *sys.argv[1:]]; main()"

# Hand-computed (docs/fabric.md): radix R = 64, su_size D = 32, 8 rails, 1:1 so U = 32 uplinks per leaf;
# leaves L = SUs x 8; two tiers while N = SUs x 32 x 8 <= R^2/2 = 2048, spines S = smallest divisor of U
# that is >= L x U / R; cables = node-leaf (nodes x 8) + leaf-spine (L x U) [+ spine-core]; bisection at 1:1 =
# nodes/2 x 8 rails x 400 Gb/s.
EXPECTED = {
    # 1 SU: L = 8, S = 8 x 32 / 64 = 4; cables 256 + 256; bisection 16 x 8 x 400
    "h100-ib-1su": dict(
        nodes=32,
        gpus=256,
        tiers=2,
        switches={"leaf": 8, "spine": 4, "core": 0},
        bisection_gbps=51_200,
        cables=512,
    ),
    # 4 SUs: N = 1024 <= 2048; L = 32, S = 32 x 32 / 64 = 16 (divides 32: 2 links per pair, 64 ports a spine);
    # cables 1024 + 32 x 32 = 2048; bisection 64 x 8 x 400
    "h100-ib-4su": dict(
        nodes=128,
        gpus=1024,
        tiers=2,
        switches={"leaf": 32, "spine": 16, "core": 0},
        bisection_gbps=204_800,
        cables=2048,
    ),
    # 2 SUs of RoCE: L = 16, S = 16 x 32 / 64 = 8 (4 links per pair); cables 512 + 512; bisection 32 x 8 x 400
    "h100-roce-2su": dict(
        nodes=64,
        gpus=512,
        tiers=2,
        switches={"leaf": 16, "spine": 8, "core": 0},
        bisection_gbps=102_400,
        cables=1024,
    ),
    # 16 SUs: N = 4096 > 2048 -> three tiers. Spine capacity R/2 = 32 leaves' links; one pod per rail (p = 1,
    # fewest pods among the 320-switch minima) of 16 leaves with k1 = 2 links to each of S_p = 16 spines ->
    # 8 pods x 16 = 128 spines, each 32 down + V = 32 up. Core group j = spine j of the 8 pods: 8 x 32 = 256
    # ports -> C = 4 cores (k2 = 8), 16 groups x 4 = 64 cores. Cables 4096 node-leaf + 128 x 32 leaf-spine
    # + 128 x 32 spine-core = 12,288; bisection 256 x 8 x 400.
    "b200-ib-16su": dict(
        nodes=512,
        gpus=4096,
        tiers=3,
        switches={"leaf": 128, "spine": 128, "core": 64},
        bisection_gbps=819_200,
        cables=12_288,
    ),
    # lab: two fabrics of one (partial) SU each, provisioned like h100-ib-1su: 2 x (8 leaves, 4 spines);
    # cables 2 x (2 nodes x 8 + 8 x 32) = 544; bisection 2 x (1 node x 8 x 400), the halves share the leaves
    "lab": dict(
        nodes=4,
        gpus=32,
        tiers=2,
        switches={"leaf": 16, "spine": 8, "core": 0},
        bisection_gbps=6_400,
        cables=544,
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_json_summary_of_example_specs(name: str, tmp_path) -> None:
    r = CliRunner().invoke(
        app, ["plan", str(CLUSTERS / f"{name}.yaml"), "--out", str(tmp_path), "--format", "json", "--no-svg"]
    )
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert {k: got[k] for k in EXPECTED[name]} == EXPECTED[name]
    assert got["cluster"] == name and len(got["plan_hash"]) == 64
    assert (tmp_path / name / "plan.json").is_file()


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("CLUSTERFORGE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _bad_lab(tmp_path: Path) -> Path:
    text = (CLUSTERS / "lab.yaml").read_text()
    text = text.replace("power_kw: 45", "power_kw: 30").replace("  serial: 2\n", "  seriall: 2\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    return bad


def test_bad_spec_exits_2_without_traceback_and_writes_nothing(tmp_path) -> None:
    bad = _bad_lab(tmp_path)
    r = _run(["plan", str(bad)], cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr + r.stdout
    assert "2 problem(s)" in r.stderr
    assert f"{bad}:{(CLUSTERS / 'lab.yaml').read_text().splitlines().index('  serial: 2') + 1}" in r.stderr
    assert "rollout.seriall" in r.stderr and "did you mean 'serial'?" in r.stderr
    assert "site.racks.power_kw" in r.stderr
    assert not (tmp_path / "inventory").exists()


def test_bad_spec_leaves_previous_outputs_untouched(tmp_path) -> None:
    good = _run(["plan", str(CLUSTERS / "lab.yaml"), "--no-svg"], cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    generated = tmp_path / "inventory" / "generated"
    before = _snapshot(generated)
    assert "lab/plan.json" in before and "lab/hosts.yml" in before
    r = _run(["plan", str(_bad_lab(tmp_path))], cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert _snapshot(generated) == before
    assert sorted(p.name for p in generated.iterdir()) == ["lab"]


def test_missing_spec_file_exits_2(tmp_path) -> None:
    r = _run(["plan", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert r.returncode == 2
    assert "no such file" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
