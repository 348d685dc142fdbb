"""Certification as a Slurm job step, end to end on this machine: the node checker program built from the
validators, run by `/usr/bin/python3 -I -S` (no site-packages: nothing but the program's own) once per
node by a stand-in `srun` that does what slurmd does for a step (start the command per node with
`SLURMD_NODENAME` set, stdin to every task, every task's stdout merged a line at a time)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clusterforge.certify.node_job import controller_checks, job_document
from clusterforge.certify.results import read_results
from clusterforge.certify.runner import PYTEST_ENV, TIER_MARKERS
from clusterforge.certify.slurm_step import CHECK, TASK_PATH, certify_step, run_step, srun_argv
from clusterforge.remote import checker_bundle
from clusterforge.remote.checker_node import JOB_VERSION
from tests.conftest import VALIDATORS, example_plan

NODE_PYTHON = "/usr/bin/python3"

FAKE_SRUN = textwrap.dedent(
    """\
    #!{python}
    # stand-in for srun: -w NODES ... CMD; DOWN (env) names nodes whose slurmd does not answer
    import json, os, subprocess, sys, threading
    with open(os.path.join(os.path.dirname(sys.argv[0]), "srun-env.json"), "w") as fh:
        json.dump(dict(os.environ), fh)
    args = sys.argv[1:]
    nodes = args[args.index("-w") + 1].split(",")
    cmd = args[args.index("python3"):]
    cmd[0] = "{node_python}"
    down = set(filter(None, os.environ.get("DOWN", "").split(",")))
    stdin = sys.stdin.buffer.read()
    lock = threading.Lock()
    def task(node):
        env = {{"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": node}}
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        p.stdin.write(stdin); p.stdin.close()
        for line in p.stdout:
            with lock:
                sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
        return p.wait()
    threads = [threading.Thread(target=task, args=(n,)) for n in nodes if n not in down]
    [t.start() for t in threads]; [t.join() for t in threads]
    for n in sorted(down):
        msg = f"Task launch for StepId=1.0 failed on node {{n}}: Communication connection failure"
        print(f"srun: error: {{msg}}", file=sys.stderr)
    sys.exit(1 if down else 0)
    """
)

pytestmark = pytest.mark.skipif(not os.access(NODE_PYTHON, os.X_OK), reason="needs the system python3")


def _setup(tmp_path: Path) -> tuple[dict[str, Any], Path, Path]:
    doc = example_plan("h100-ib-1su").doc
    inv = tmp_path / "inventory"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "group_vars" / "all.yml").write_text("os_tuning_example_knob: 7\nmonitoring_x: '{{ t }}'\n")
    (inv / "plan.json").write_text(json.dumps(doc))  # the controller's own checks (bmc) read it
    checker = tmp_path / "node" / checker_bundle.FILE_NAME
    checker_bundle.write(checker.parent)
    for n in doc["nodes"]:  # where this machine's "nodes" have it
        n["desired"]["monitoring"]["checker"]["path"] = str(checker)
    srun = tmp_path / "srun"
    srun.write_text(FAKE_SRUN.format(python=sys.executable, node_python=NODE_PYTHON))
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    return doc, inv, srun


def test_a_step_over_two_nodes_answers_as_the_ssh_runs_do(tmp_path: Path) -> None:
    doc, inv, srun = _setup(tmp_path)
    nodes = [n["name"] for n in doc["nodes"][:3]]
    os.environ["DOWN"] = nodes[2]
    try:
        res = certify_step(doc, inv, nodes, TIER_MARKERS["quick"], tmp_path / "work", 300, srun=str(srun))
    finally:
        del os.environ["DOWN"]
    assert list(res) == nodes
    for node in nodes[:2]:
        r = res[node]
        assert r.complete, r.note
        assert r.collected > 50 and len(r.checks) >= r.collected
        assert {c.node for c in r.checks} == {node}
        # this machine is no GPU node: checks fail or error on what it lacks, none crashed on a missing import
        assert r.verdict in ("fail", "error")
        assert not [c for c in r.checks if "No module named" in c.message], r.checks[:3]
        assert not [c for c in r.checks if c.check_id.startswith("bios.")]  # controller-only
    # the BMC checks never go to a node (its account stays here): the node runs the rest, this process them
    sent = gzip.decompress((tmp_path / "work" / "slurm-job-0.json.gz").read_bytes())
    assert json.loads(sent)["marker"] == "(quick) and not bmc"
    ran_here = (tmp_path / "work" / "controller-bmc-0.jsonl").read_text()
    assert '"kind": "end"' in ran_here
    # the same verdicts as the validators run from the controller against the same machine
    direct = tmp_path / "direct.jsonl"
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    subprocess.run(
        [
            sys.executable, "-m", "pytest", str(VALIDATORS), "-m", "quick",
            "--plan", str(tmp_path / "plan.json"),
            "--hosts", f"local://{nodes[0]}", "--cf-results", str(direct), "-q", "-p", "no:cacheprovider",
            "-p", "testinfra.plugin", "--tb=no", "--ignore", str(VALIDATORS / "test_bios.py"),
        ],
        capture_output=True, env={**os.environ, **PYTEST_ENV}, cwd=tmp_path, check=False, timeout=300,
    )  # fmt: skip
    want = {(c.check_id, c.status) for c in read_results(direct, nodes[0]).checks}
    assert {(c.check_id, c.status) for c in res[nodes[0]].checks} == want
    down = res[nodes[2]]
    assert down.verdict == "error" and not down.complete
    assert [c.check_id for c in down.checks] == [CHECK]
    assert "Communication connection failure" in down.checks[0].message


def test_the_step_reads_the_applied_state_it_is_asked_for_beside_the_checks(tmp_path: Path) -> None:
    """`clusterforge drift --via slurm`: one program reads the node for the validators and for the state
    its last provision left; a node asked nothing answers no state, a node that does not answer an error."""
    doc, inv, srun = _setup(tmp_path)
    a, b, c = (n["name"] for n in doc["nodes"][:3])
    mine = tmp_path / "managed.conf"
    mine.write_text("x = 1\n")
    names = {"files": [str(mine), str(tmp_path / "absent")], "packages": [], "services": [], "modules": []}
    os.environ["DOWN"] = c
    try:
        answer = run_step(
            doc, inv, [a, b, c], "quick", tmp_path / "w", 300, states={a: names, c: names}, srun=str(srun)
        )
    finally:
        del os.environ["DOWN"]
    assert answer.results[a].complete and answer.results[b].complete
    files = answer.states[a]["files"]
    assert files[str(mine)]["sha256"] == hashlib.sha256(b"x = 1\n").hexdigest()
    assert files[str(tmp_path / "absent")] is None
    assert b not in answer.states and b not in answer.state_errors  # asked nothing
    assert c not in answer.states and "not answered in the Slurm step" in answer.state_errors[c]
    assert answer.unanswered == {c}  # nothing came back: the flows read it over SSH instead


def test_the_job_carries_the_plan_cut_to_the_step_and_the_nodes_knobs(tmp_path: Path) -> None:
    doc, inv, _ = _setup(tmp_path)
    nodes = [doc["nodes"][1]["name"]]
    job = json.loads(job_document(doc, inv, nodes, "quick"))
    assert job["version"] == JOB_VERSION and job["marker"] == "quick"
    assert [n["name"] for n in job["plan"]["nodes"]] == nodes
    assert job["plan"]["plan_hash"] == doc["plan_hash"]
    # the knobs as the validators read them from group_vars/: templated values are left out
    assert job["knobs"] == {nodes[0]: {"os_tuning_example_knob": 7}}


def test_a_node_outside_the_job_answers_a_checker_error_not_a_verdict(tmp_path: Path) -> None:
    doc, inv, _srun = _setup(tmp_path)
    checker = doc["nodes"][0]["desired"]["monitoring"]["checker"]["path"]
    job = job_document(doc, inv, [doc["nodes"][0]["name"]], "quick")
    p = subprocess.run(
        [NODE_PYTHON, "-I", "-S", checker, "--node", "not-a-node"],
        input=job,
        capture_output=True,
        check=False,
    )
    from clusterforge.remote.frames import decode

    got, bad = decode(p.stdout.decode().splitlines())
    assert bad == {} and p.returncode == 0
    rec = json.loads(got["not-a-node"])
    assert rec["kind"] == "checker_error" and "not a node of this job" in rec["message"]


def test_no_checker_on_the_node_is_an_error_naming_the_role(tmp_path: Path) -> None:
    doc, inv, srun = _setup(tmp_path)
    for n in doc["nodes"]:
        n["desired"]["monitoring"]["checker"]["path"] = str(tmp_path / "absent.pyz")
    node = doc["nodes"][0]["name"]
    res = certify_step(doc, inv, [node], "quick", tmp_path / "work", 60, srun=str(srun))[node]
    assert res.verdict == "error" and res.checks[0].check_id == CHECK
    assert "monitoring" in (res.checks[0].fix or "")


def test_srun_gets_where_its_controller_is_and_no_other_value_of_the_target(tmp_path: Path) -> None:
    doc, inv, srun = _setup(tmp_path)
    node = doc["nodes"][0]["name"]
    env = {"SLURM_CONF": "/etc/lab/slurm.conf", "CLUSTERFORGE_LAB_BMC_PASSWORD": "not-for-nodes"}
    certify_step(doc, inv, [node], "quick", tmp_path / "w", 120, env=env, srun=str(srun))
    seen = json.loads((tmp_path / "srun-env.json").read_text())
    assert seen["SLURM_CONF"] == "/etc/lab/slurm.conf"
    assert "not-for-nodes" not in json.dumps(seen)


def test_many_nodes_are_steps_of_step_nodes_each_sent_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.certify import slurm_step

    doc, inv, srun = _setup(tmp_path)
    nodes = [n["name"] for n in doc["nodes"][:3]]
    monkeypatch.setattr(slurm_step, "STEP_NODES", 2)
    res = certify_step(doc, inv, nodes, "quick", tmp_path / "w", 300, srun=str(srun))
    assert list(res) == nodes and all(r.complete for r in res.values())
    sent = [
        json.loads(gzip.decompress((tmp_path / "w" / f"slurm-job-{i}.json.gz").read_bytes())) for i in (0, 1)
    ]
    assert [[n["name"] for n in s["plan"]["nodes"]] for s in sent] == [nodes[:2], nodes[2:]]


def test_srun_missing_is_an_error_per_node(tmp_path: Path) -> None:
    doc, inv, _ = _setup(tmp_path)
    node = doc["nodes"][0]["name"]
    res = certify_step(doc, inv, [node], "quick", tmp_path / "w", 60, srun=str(tmp_path / "no-srun"))[node]
    assert res.verdict == "error" and "cannot run" in res.checks[0].message
    answer = run_step(doc, inv, [node], "quick", tmp_path / "w2", 60, srun=str(tmp_path / "no-srun"))
    assert answer.unanswered == {node}


def test_srun_argv_broadcasts_the_job_and_runs_without_an_allocation() -> None:
    argv = srun_argv(["a", "b"], "/usr/local/lib/clusterforge/clusterforge-checker.pyz")
    assert argv[:5] == ["srun", "-Z", "-N2", "-w", "a,b"]
    assert "--input=all" in argv and "--ntasks-per-node=1" in argv
    assert [a for a in argv if a.startswith("--export")] == [f"--export=PATH={TASK_PATH}"]  # nothing else
    assert argv[-4:] == ["python3", "-I", "-S", "/usr/local/lib/clusterforge/clusterforge-checker.pyz"]


def test_the_program_is_the_same_bytes_every_build_and_leaves_the_bios_validator_out(tmp_path: Path) -> None:
    a = checker_bundle.write(tmp_path / "a")
    mtime = a.stat().st_mtime_ns
    assert checker_bundle.write(tmp_path / "a").stat().st_mtime_ns == mtime  # unchanged: not rewritten
    assert checker_bundle.build() == a.read_bytes()
    names = set(checker_bundle.entries())
    assert "cf_validators/conftest.py" in names and "cf_validators/test_gpu.py" in names
    assert "cf_validators/test_bios.py" not in names
    assert "yaml/__init__.py" in names and "pygments/lexers/python.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyc"))]  # a zip loads no C extension
    assert not [n for n in names if n.startswith("clusterforge/_assets/") or "__pycache__" in n]
    assert any(n.startswith("_pytest/") for n in names) and any(n.startswith("testinfra/") for n in names)
    shutil.rmtree(tmp_path / "a")


def test_the_bmc_checks_run_here_in_chunks_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.certify import node_job

    doc, inv, _ = _setup(tmp_path)
    nodes = [n["name"] for n in doc["nodes"][:3]]
    monkeypatch.setattr(node_job, "BMC_CHUNK", 2)
    (tmp_path / "w").mkdir()
    got, notes = controller_checks(inv, nodes, "quick", tmp_path / "w", 120, None, None)
    assert notes == {}
    for i in (0, 1):  # one pytest process per chunk, each to its end
        assert '"kind": "end"' in (tmp_path / "w" / f"controller-bmc-{i}.jsonl").read_text()
    assert set(got) <= set(nodes)


def test_the_program_run_by_the_health_checks_name_is_the_health_check(tmp_path: Path) -> None:
    """One program on the node: linked as the health check's path (what the monitoring role does) and
    started as Slurm's HealthCheckProgram starts it (exec, no arguments but its own), or as `PROGRAM
    health`, it is `clusterforge.health.nodecheck` — without loading pytest (it runs between jobs)."""
    import os
    import subprocess

    from clusterforge.plan.desired_monitoring import HEALTH_PATH

    assert Path(HEALTH_PATH).name == checker_bundle.HEALTH_NAME
    program = checker_bundle.write(tmp_path / "lib")
    assert program.read_bytes().startswith(checker_bundle.SHEBANG)
    program.chmod(0o755)
    link = tmp_path / "sbin" / checker_bundle.HEALTH_NAME
    link.parent.mkdir()
    link.symlink_to(program)
    conf = tmp_path / "health.json"
    conf.write_text(
        json.dumps(
            {
                "gpu_count": 8,
                "rails": [],
                "fabric_manager": False,
                "dcgm_exporter_url": "http://127.0.0.1:1/metrics",
                "state_dir": str(tmp_path / "state"),
                "textfile": "",
                "pool": "none",
            }
        )
    )
    args = ["--config", str(conf), "--node", "n1", "--state-dir", str(tmp_path / "s")]
    env = {"PATH": os.environ["PATH"]}
    for argv in ([str(link), *args], ["/usr/bin/python3", "-I", "-S", str(program), "health", *args]):
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        assert res.returncode == 0, res.stderr[-2000:]
        assert res.stdout.startswith("n1: healthy"), res.stdout
    direct = subprocess.run(
        ["/usr/bin/python3", "-X", "importtime", str(link), *args], capture_output=True, text=True, timeout=60
    )
    assert direct.returncode == 0 and "clusterforge.health.nodecheck" in direct.stderr
    assert "pytest" not in direct.stderr, "the health check must not load the validators' machinery"
