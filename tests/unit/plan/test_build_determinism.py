"""Same spec -> byte-identical plan.json: twice in one process, and across processes with other hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys

from clusterforge.plan import build_plan
from clusterforge.plan.outputs import plan_json_text
from clusterforge.spec import load_spec
from tests.conftest import CLUSTERS, REPO


def test_same_spec_twice_gives_identical_plan_json() -> None:
    spec = CLUSTERS / "lab.yaml"
    a = plan_json_text(build_plan(load_spec(spec)))
    b = plan_json_text(build_plan(load_spec(spec)))
    assert a == b
    assert a.endswith("}\n") and "\n" not in a[:-1]


def test_plan_json_is_identical_across_hash_seeds(tmp_path) -> None:
    spec = CLUSTERS / "lab.yaml"
    expected = plan_json_text(build_plan(load_spec(spec))).encode()
    code = "import sys; from clusterforge.cli import main; sys.argv = ['clusterforge', *sys.argv[1:]]; main()"
    outputs = []
    for seed in ("1", "4242"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "plan",
                str(spec),
                "--out",
                str(out),
                "--no-svg",
                "--format",
                "json",
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr.decode()
        outputs.append((out / "lab" / "plan.json").read_bytes())
    assert outputs[0] == outputs[1] == expected
