"""Storage in burn-in (`burnin.storage`): fio seq read/write per storage target, in the node script only when
the node declares storage, parsed from real fio JSON, judged against its fleet and its floors; a missing fio,
an unmounted target or a hung fio is an error, never a fail."""

from __future__ import annotations

import copy
import json
import os
import random
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from burnin_data import plan_of

from clusterforge.burnin import issue, measure, storage, suite
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.verdicts import evaluate
from clusterforge.flows import burnin as flow
from clusterforge.plan.build import build_plan
from clusterforge.plan.expect import NodeExpect, node_expect, nodes_of
from clusterforge.remote.fio_jobs import fio_args, fio_cmd
from clusterforge.spec import load_spec_text
from tests.conftest import CLUSTERS, REAL, without_storage

FIO = REAL / "fio-json__azure-gpu-vm-nvme0n1-randrw-4k-qd64-4jobs-lat-percentiles-superbench__1.txt"
READ_GBS = 0.3487  # the capture's read bw_bytes 348743777 / 1e9
WRITE_GBS = 0.3485  # its write bw_bytes 348450387 / 1e9
SPEC = "h100-ib-1su"  # scratch /raid (floors 20/10 GB/s), lustre /lustre (10/5), home /home (no fio floor)


@pytest.fixture(scope="module")
def plan() -> dict[str, Any]:
    return plan_of(SPEC)


@pytest.fixture(scope="module")
def node(plan: dict[str, Any]) -> NodeExpect:
    return next(iter(nodes_of(plan).values()))


def _ok(text: str) -> suite.Section:
    return suite.Section(0, text, "")


def _sections(node: NodeExpect, sec: suite.Section) -> dict[str, suite.Section]:
    return {k: sec for k, _t, _c in storage.steps(node)}


# ---- the node script ---------------------------------------------------------------------------------------
def test_fio_steps_only_when_the_node_declares_storage(node: NodeExpect) -> None:
    opts = suite.SuiteOptions()
    keys = [k for k, _t, _c in suite.steps(node, opts)]
    fio_keys = [k for k in keys if k.startswith("fio.")]
    assert fio_keys == [
        "fio.seq_read.scratch",
        "fio.seq_write.scratch",
        "fio.seq_read.lustre",
        "fio.seq_write.lustre",
    ]  # home declares no fio floor: not loaded
    assert keys.index("fio.seq_read.scratch") > keys.index("allreduce") and keys[-2:] == ["ecc", "counters"]
    text = without_storage((CLUSTERS / "lab.yaml").read_text(encoding="utf-8"))
    bare = next(iter(nodes_of(build_plan(load_spec_text(text, "lab.yaml")).doc).values()))
    assert not bare.desired_state.get("storage")
    assert not [k for k, _t, _c in suite.steps(bare, opts) if k.startswith("fio")]
    assert "fio" not in suite.script(bare, opts)[0]


def test_fio_steps_are_the_full_tiers_commands(node: NodeExpect) -> None:
    io = node.desired_state["storage"]["io_test"]
    cmds = {k: (t, c) for k, t, c in storage.steps(node)}
    assert cmds["fio.seq_read.scratch"][1] == fio_cmd("/raid", fio_args("seq_read", io, True))
    assert cmds["fio.seq_write.lustre"][1] == fio_cmd("/lustre", fio_args("seq_write", io, True))
    assert (
        "--rw=read" in cmds["fio.seq_read.scratch"][1] and "--size=1024m" in cmds["fio.seq_read.scratch"][1]
    )
    assert cmds["fio.seq_read.scratch"][0] == int(io["runtime_s"]) * 2 + 600
    # under the suite's timeout wrapper, each with its own limit
    text, deadline = suite.script(node, suite.SuiteOptions())
    assert "cfb fio.seq_read.scratch 640 " in text
    assert deadline > sum(t for _k, t, _c in suite.steps(node, suite.SuiteOptions()))


def _stub(bin_dir: Path, name: str, body: str) -> None:
    f = bin_dir / name
    f.write_text("#!/bin/sh\n" + body + "\n")
    f.chmod(f.stat().st_mode | stat.S_IEXEC)


def _run(tmp_path: Path, node: NodeExpect, stubs: dict[str, str]) -> dict[str, suite.Section]:
    """The node's script for real (bash, timeout) with stub tools; the GPU and RDMA tools are absent, so
    only the fio sections are looked at."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # every mktemp -d (the script's own folder, fio's under each target) made under tmp_path instead
    stubs = {"mktemp": f'exec /usr/bin/mktemp -d "{tmp_path}/made.XXXXXX"', **stubs}
    for name, body in stubs.items():
        _stub(bin_dir, name, body)
    text, _deadline = suite.script(node, suite.SuiteOptions(ib_sysfs=str(tmp_path / "none")))
    p = subprocess.run(
        ["bash", "-s"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env=dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin"),
    )
    assert p.returncode == 0, p.stderr
    return suite.split_sections(p.stdout)


def test_script_runs_fio_on_each_target_and_parses_real_json(tmp_path: Path, node: NodeExpect) -> None:
    stubs = {"fio": f'[ "$1" = --version ] && echo fio-3.16 && exit 0; cat {FIO}', "mountpoint": "exit 0"}
    sections = _run(tmp_path, node, stubs)
    assert all(sections[k].rc == 0 for k, _t, _c in storage.steps(node)), {
        k: (s.rc, s.err[-200:]) for k, s in sections.items() if s.rc and k.startswith("fio")
    }
    sample = measure.parse_node(node, sections, suite.SuiteOptions())
    fio = {(m.test, m.component): m for m in sample.measurements if m.test.startswith("fio.")}
    assert set(fio) == {
        ("fio.seq_read", "storage:scratch"),
        ("fio.seq_write", "storage:scratch"),
        ("fio.seq_read", "storage:lustre"),
        ("fio.seq_write", "storage:lustre"),
    }
    read = fio[("fio.seq_read", "storage:scratch")]
    assert read.value == READ_GBS and read.unit == "GB/s" and read.detail["target"] == "/raid"
    assert fio[("fio.seq_write", "storage:lustre")].value == WRITE_GBS
    assert sample.tool_versions["fio"] == "fio-3.16"


def test_script_keeps_a_mount_point_one_literal_argument(tmp_path: Path, plan: dict[str, Any]) -> None:
    """A mount point with shell metacharacters (the spec refuses them; the script must not rely on that)
    reaches mountpoint and fio as one argument and runs nothing."""
    doc = copy.deepcopy(plan)
    entry = doc["nodes"][0]
    evil = "/mnt/x $(touch canary);`touch canary` 'q\""
    entry["desired"]["storage"]["scratch"]["target"] = evil
    node = node_expect(doc, entry)
    log = tmp_path / "argv.log"
    logger = f'for a in "$@"; do printf "%s\\0" "$a"; done >> {log}; echo >> {log}'
    stubs = {
        "fio": logger,
        "mountpoint": logger,
        "mktemp": f'{logger}; exec /usr/bin/mktemp -d "{tmp_path}/m.XXXXXX"',
    }
    _run(tmp_path, node, stubs)
    got = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    assert ["-q", evil] in got
    assert ["-d", f"{evil}/.cf-fio-XXXXXXXX"] in got
    assert any(c[-1].startswith(f"--directory={tmp_path}/m.") for c in got if c)
    assert not (tmp_path / "canary").exists()


# ---- what a run that measured nothing gives ----------------------------------------------------------------
def test_fio_absent_is_an_error_naming_fio(node: NodeExpect) -> None:
    sec = suite.Section(127, "", "sh: 1: fio: not found\n")
    ms = storage.measurements(node, _sections(node, sec), {}, {})
    assert len(ms) == 4 and all(not m.ok and m.missing == "fio" for m in ms)
    assert ms[0].error == "cannot certify: fio missing (install: role storage, tag storage_packages)"
    assert {m.component for m in ms} == {"storage:scratch", "storage:lustre"}


def test_unmounted_target_hung_fio_and_job_errors_measured_nothing(node: NodeExpect) -> None:
    st = node.desired_state["storage"]
    cmd = fio_cmd("/raid", fio_args("seq_read", st["io_test"], True))
    t = next(x for x in storage.targets(st) if x["name"] == "scratch")
    out = subprocess.run(
        ["sh", "-c", cmd.replace("fio --version", "true", 1)], capture_output=True, text=True
    )
    unmounted = storage._one(
        "n1", t, "seq_read", suite.Section(out.returncode, out.stdout, out.stderr), 640, {}
    )
    assert unmounted.unmeasured == "fio" and unmounted.value is None
    assert unmounted.error == "cannot certify: fio not run: /raid is not a mount point"
    hung = storage._one("n1", t, "seq_read", suite.Section(124, "", ""), 640, {})
    assert hung.error == "cannot certify: fio timed out after 640 s"
    doc = json.loads(FIO.read_text())
    doc["jobs"][0]["error"] = 5
    failed = storage._one("n1", t, "seq_read", suite.Section(1, json.dumps(doc), ""), 640, {})
    assert failed.unmeasured == "fio" and failed.error.startswith(
        "cannot certify: fio reported job errors on /raid: {"
    )
    never = storage._one("n1", t, "seq_read", None, 640, {})
    assert never.unmeasured == "fio" and "did not run" in never.error


# ---- fleet verdicts ----------------------------------------------------------------------------------------
NOMINAL = {  # (test, component) -> GB/s on a healthy node; the floors are 20/10 (scratch), 10/5 (lustre)
    ("fio.seq_read", "storage:scratch"): 40.0,
    ("fio.seq_write", "storage:scratch"): 22.0,
    ("fio.seq_read", "storage:lustre"): 14.0,
    ("fio.seq_write", "storage:lustre"): 8.0,
}


def _fleet(
    nodes: list[str], factors: dict[tuple[str, str, str], float], iterations: int = 3, scale: float = 1.0
) -> list[tuple[int, Measurement]]:
    rng = random.Random(7)
    rows = []
    for it in range(1, iterations + 1):
        for n in nodes:
            for (test, comp), nominal in NOMINAL.items():
                v = nominal * scale * factors.get((n, test, comp), 1.0) * (1 + rng.gauss(0, 0.01))
                rows.append((it, Measurement(test, n, comp, value=round(v, 4), unit="GB/s")))
    return rows


def test_a_node_whose_scratch_reads_40_percent_low_is_named(plan: dict[str, Any]) -> None:
    nodes = [n["name"] for n in plan["nodes"][:8]]
    bad = nodes[5]
    rows = _fleet(nodes, {(bad, "fio.seq_read", "storage:scratch"): 0.6})  # 24 GB/s: above the 20 floor
    ev = evaluate(rows, plan, nodes)
    v = ev.nodes[bad]
    assert v.verdict == "fail" and v.components == ["scratch /raid"]
    f = v.findings[0]
    assert f.kind == "low" and f.test == "fio.seq_read" and f.unit == "GB/s"
    assert f.value == pytest.approx(24, rel=0.03) and f.fleet == pytest.approx(40, rel=0.02)
    assert f.summary.startswith(f"outlier {bad} scratch /raid fio seq read 24 GB/s vs fleet 40 GB/s (z -")
    assert flow.drain_reason(v).startswith(f"clusterforge: burnin outlier {bad} scratch /raid fio seq read")
    assert all(ev.nodes[n].verdict == "pass" for n in nodes if n != bad)
    key = ("fio.seq_read", bad, "storage:scratch", "")
    assert ev.classes[key] == "fio.seq_read | storage:scratch | SKU h100-sxm-8x400g-ib"
    checks = {c["id"]: c for c in issue.cert_checks(ev, bad)}
    assert checks["burnin.fio.seq_read"]["status"] == "fail"
    assert checks["burnin.fio.seq_write"]["status"] == "pass"
    # the same fleet without the fault: nobody named
    assert evaluate(_fleet(nodes, {}), plan, nodes).passed


def test_only_scratch_is_judged_unstable(plan: dict[str, Any]) -> None:
    """Iteration-to-iteration swings of 30 % on every node: on the shared filesystem they are the shared back
    end's (every node measures at once), nobody is blamed; on one node's own scratch they are that node's."""
    nodes = [n["name"] for n in plan["nodes"][:8]]
    swing = {1: 1.0, 2: 1.3, 3: 0.75}
    rows = [
        (
            it,
            Measurement(
                m.test, m.node, m.component, value=round(float(m.value or 0) * swing[it], 4), unit="GB/s"
            )
            if m.component == "storage:lustre"
            or (m.node == nodes[2] and m.test == "fio.seq_read" and m.component == "storage:scratch")
            else m,
        )
        for it, m in _fleet(nodes, {})
    ]
    ev = evaluate(rows, plan, nodes)
    assert {n for n in nodes if ev.nodes[n].verdict != "pass"} == {nodes[2]}
    (f,) = ev.nodes[nodes[2]].findings
    assert (f.kind, f.test, f.component) == ("variable", "fio.seq_read", "scratch /raid")
    assert f.summary.startswith(f"unstable {nodes[2]} scratch /raid fio seq read run-to-run variation")


def test_storage_floors_are_judged_as_the_other_floors(plan: dict[str, Any]) -> None:
    """Every node at 48 % of nominal: nobody is out of the fleet; every node is under scratch's seq_read floor
    (19.2 < 20 GB/s) and lustre's (6.7 < 10, 3.8 < 5), not under scratch's seq_write floor (10.6 > 10)."""
    nodes = [n["name"] for n in plan["nodes"][:8]]
    ev = evaluate(_fleet(nodes, {}, scale=0.48), plan, nodes)
    for n in nodes:
        v = ev.nodes[n]
        assert v.verdict == "fail" and {f.kind for f in v.findings} == {"threshold"}
        got = {(f.test, f.component) for f in v.findings}
        assert got == {
            ("fio.seq_read", "scratch /raid"),
            ("fio.seq_read", "lustre /lustre"),
            ("fio.seq_write", "lustre /lustre"),
        }
    f = next(
        f for f in ev.nodes[nodes[0]].findings if f.component == "lustre /lustre" and f.test == "fio.seq_read"
    )
    assert f.summary.startswith(f"below floor {nodes[0]} lustre /lustre fio seq read 6.")
    assert f.summary.endswith(" GB/s below the storage floor 10 GB/s")


def test_fio_absent_on_one_node_is_error_not_fail(plan: dict[str, Any]) -> None:
    nodes = [n["name"] for n in plan["nodes"][:8]]
    gone = nodes[2]
    expect = nodes_of(plan)[gone]
    absent = storage.measurements(
        expect, _sections(expect, suite.Section(127, "", "sh: 1: fio: not found\n")), {}, {}
    )
    rows = [(it, m) for it, m in _fleet(nodes, {}) if m.node != gone] + [(1, m) for m in absent]
    ev = evaluate(rows, plan, nodes)
    v = ev.nodes[gone]
    assert v.verdict == "error" and v.components == [] and [f.kind for f in v.findings] == ["missing"]
    assert flow.drain_reason(v) == (
        "clusterforge: burnin cannot certify: fio missing (install: role storage, tag storage_packages)"
    )
    checks = {c["id"]: c["status"] for c in issue.cert_checks(ev, gone)}
    assert checks["burnin.fio.seq_read"] == "error" and "fail" not in checks.values()
    assert all(ev.nodes[n].verdict == "pass" for n in nodes if n != gone)


# ---- --no-storage ------------------------------------------------------------------------------------------
def test_no_storage_option_leaves_storage_out(node: NodeExpect) -> None:
    off = suite.SuiteOptions(storage=False)
    assert not [k for k, _t, _c in suite.steps(node, off) if k.startswith("fio")]
    assert not [m for m in measure.parse_node(node, {}, off).measurements if m.test.startswith("fio")]
    on = measure.parse_node(node, {}, suite.SuiteOptions()).measurements
    assert len([m for m in on if m.test.startswith("fio")]) == 4  # never reached: errors, not silence


def test_resumed_run_keeps_its_stored_storage_choice() -> None:
    from dataclasses import asdict

    from clusterforge.burnin.runner import Options

    stored = Options(iterations=2, suite=suite.SuiteOptions(storage=False)).as_dict()
    assert Options.from_stored(stored, 2, None).suite.storage is False
    assert Options.from_stored(Options(iterations=2).as_dict(), 2, None).suite.storage is True
    old = {"suite": {k: v for k, v in asdict(suite.SuiteOptions()).items() if k != "storage"}}
    assert Options.from_stored(old, 2, None).suite.storage is False  # stored before storage was measured


@pytest.mark.parametrize(("flag", "want"), [([], True), (["--no-storage"], False), (["--storage"], True)])
def test_cli_storage_flag(monkeypatch: pytest.MonkeyPatch, flag: list[str], want: bool) -> None:
    from typer.testing import CliRunner

    from clusterforge.cli import app
    from clusterforge.flows import burnin as runner
    from clusterforge.records.burnin import BurninError

    seen: list[bool] = []

    def run(*args: Any, **kw: Any) -> None:
        seen.append(args[3].suite.storage)
        raise BurninError("stopped by the test")

    monkeypatch.setattr(runner, "run", run)
    res = CliRunner().invoke(app, ["burnin", "inventory/clusters/lab.yaml", "--iterations", "1", *flag])
    assert res.exit_code == 2 and "stopped by the test" in res.output, res.output
    assert seen == [want]
