"""The node-side health check: a mode of the node checker that reads with the validators' parsers and decides
with the registry's rules, loading nothing else."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clusterforge.checks import registry
from clusterforge.checks.passive import NODE_CHECKS
from clusterforge.checks.rules import Event, decide
from clusterforge.health import nodecheck

REAL = Path(__file__).parents[2] / "fixtures/real"
SRC = Path(nodecheck.__file__).parents[2]

#: what the health check may import of clusterforge: the registry, its rules and two parsers
ALLOWED = {
    "clusterforge.checks.model",
    "clusterforge.checks.passive",
    "clusterforge.checks.registry",
    "clusterforge.checks.rules",
    "clusterforge.hw",
    "clusterforge.hw.errors",
}


def test_imports_only_the_stdlib_the_registry_and_its_parsers() -> None:
    tree = ast.parse(Path(nodecheck.__file__).read_text())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    ours = {m for m in mods if m.startswith("clusterforge")}
    assert ours <= ALLOWED, ours - ALLOWED
    assert {m.split(".")[0] for m in mods - ours} - {"__future__"} <= set(sys.stdlib_module_names)


def test_loads_no_other_clusterforge_module_nor_a_third_party_package() -> None:
    """Run as slurmd runs it, the program loads the registry, the rules and the two parsers it reads with:
    not the other parsers (the hw package loads lazily), not pytest, not PyYAML on a node without Xids."""
    code = (
        "import sys, json; from clusterforge.health import nodecheck; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('clusterforge', 'pytest', '_pytest', 'yaml', 'testinfra', 'pydantic'))))"
    )
    prog = f"import sys; sys.path.insert(0, {str(SRC)!r}); {code}"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", prog], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert all(m.startswith("clusterforge") for m in loaded), loaded
    parsers = {m for m in loaded if m.startswith("clusterforge.hw.")}
    assert parsers == {"clusterforge.hw.errors", "clusterforge.hw._common", "clusterforge.hw.xid",
                       "clusterforge.hw.dcgm_exporter"}, parsers  # fmt: skip


def _raw_dmesg(path: Path) -> bool:
    """A capture as plain `dmesg` prints it (what the check reads when /dev/kmsg cannot be opened)."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    return bool(lines) and all(nodecheck.DMESG_TS.match(ln) or ln[:1].isspace() for ln in lines)


RAW_DMESG = [p for p in sorted(REAL.glob("xid__*")) if _raw_dmesg(p)]


def test_some_real_kernel_logs_are_raw_dmesg() -> None:
    """Among them a GPU lost over three lines with no Xid line (the continuation lines must be read too)."""
    assert len(RAW_DMESG) >= 2
    lost = [p for p in RAW_DMESG if "fallen-off-bus-no-xid" in p.name]
    assert lost, [p.name for p in RAW_DMESG]


@pytest.mark.parametrize("path", RAW_DMESG, ids=lambda p: p.name[:40])
def test_every_xid_of_a_real_log_is_a_finding_of_its_registry_check(path: Path, tmp_path: Path) -> None:
    """A real kernel log as `dmesg` prints it: the check finds what the validators' parser finds, each as
    an event of the Xid's registry check."""
    from clusterforge.hw import xid as hw_xid

    text = path.read_text()
    expected = hw_xid.parse(text)
    env = nodecheck.Env(root=str(tmp_path), run=lambda argv, t: (0, text) if argv == ["dmesg"] else (1, ""))
    state: dict[str, object] = {"held": set(), "held_now": []}
    res = nodecheck.probe({"gpu_count": 0, "dcgm_exporter_url": "", "state_dir": "/s"}, env, state)
    assert "passive.xid" not in res.errors
    assert [(f["check"], f["component"], f["code"]) for f in res.findings] == [
        (registry.xid_check(e.xid).id, f"pci {e.bus}", str(e.xid)) for e in expected
    ]


def test_a_kernel_log_that_does_not_parse_is_an_error_not_a_pass(tmp_path: Path) -> None:
    cut = "[  93.317398] NVRM: Xid (PCI:0000:a1:00): 7"  # an Xid line cut mid-line
    env = nodecheck.Env(root=str(tmp_path), run=lambda argv, t: (0, cut) if argv == ["dmesg"] else (1, ""))
    res = nodecheck.probe({"gpu_count": 0, "dcgm_exporter_url": "", "state_dir": "/s"}, env,
                          {"held": set(), "held_now": []})  # fmt: skip
    assert "does not parse" in res.errors["passive.xid"] and not res.findings


def test_decisions_are_the_registrys() -> None:
    """evaluate() decides with checks.rules.decide on the registry's checks: the same action and reason."""
    now = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    for check in NODE_CHECKS:
        res = nodecheck.Result()
        res.add(check, "gpu1", "79")
        state = {"events": [{"check": check, "at": now - 600, "component": "gpu1", "code": "79"}]}
        [d] = nodecheck.evaluate(res, state, "n1", now)
        events = [Event(e["check"], "n1", datetime.fromtimestamp(e["at"], UTC), e["component"], e["code"])
                  for e in state["events"]]  # fmt: skip
        theirs = decide(registry.get(check), "n1", events, datetime.fromtimestamp(now, UTC))
        assert theirs is not None and (d.action, d.reason) == (theirs.action, theirs.reason), check


def test_worst_action_first_then_the_node_check_order() -> None:
    res = nodecheck.Result()
    for check in ("passive.gpu_lost", "passive.xid.79", "passive.certificate_expiring"):
        res.add(check)
    decisions = nodecheck.evaluate(res, {}, "n1", 1_800_000_000.0)
    assert [d.check for d in decisions][:2] == ["passive.xid.79", "passive.gpu_lost"]
    assert decisions[-1].check == "passive.certificate_expiring"


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = {
        "gpu_count": 8,
        "rails": [],
        "fabric_manager": False,
        "dcgm_exporter_url": "http://127.0.0.1:1/metrics",  # nothing listens: an error, not a fault
        "state_dir": str(tmp_path / "state"),
        "textfile": "",
        "pool": "slurm",
    }
    conf = tmp_path / "health.json"
    conf.write_text(json.dumps(cfg))
    assert nodecheck.main(["--config", str(conf), "--node", "n1", "--state-dir", str(tmp_path / "s2")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("n1: healthy (could not check: ") and "passive.gpu_lost" in out
    assert (tmp_path / "s2" / "state.json").is_file() and not (tmp_path / "state").exists()
    assert nodecheck.main(["--config", str(tmp_path / "missing.json")]) == 2


def _fm_probe(tmp_path: Path, answer: tuple[int, str], held: list[str]) -> tuple[nodecheck.Result, list[str]]:
    """probe() with only the fabric manager check reading (the rest of the node: an empty root)."""
    cfg: dict[str, object] = {
        "gpu_count": 0,
        "rails": [],
        "fabric_manager": True,
        "dcgm_exporter_url": "http://127.0.0.1:1/x",
        "state_dir": str(tmp_path / "state"),
    }
    env = nodecheck.Env(
        root=str(tmp_path),
        run=lambda argv, timeout: answer if argv[:2] == ["systemctl", "is-active"] else (1, ""),
        http=lambda url, timeout: "",
    )
    state: dict[str, object] = {"held": held, "held_now": [], "kmsg_seq": None}
    return nodecheck.probe(cfg, env, state), state["held_now"]  # type: ignore[return-value]


def test_fabric_manager_inactive_is_a_finding_but_an_unanswered_systemctl_is_not(tmp_path: Path) -> None:
    """Seen in the lab (make test, session 17): right after a reboot on a busy 2-core host, `systemctl
    is-active` did not answer within 0.5 s and the node was drained for its fabric manager. A program that
    is missing or does not answer is `could not check`; only a measured state drains."""
    res, held = _fm_probe(tmp_path, (3, "inactive\n"), [])
    assert "passive.fabric_manager" in res.holding and held == ["passive.fabric_manager"]
    res, held = _fm_probe(tmp_path, (nodecheck.NOT_RUN, "timed out after 0.5 seconds"), [])
    assert "passive.fabric_manager" not in res.holding and held == []
    assert "did not answer" in res.errors["passive.fabric_manager"]
    _, held = _fm_probe(tmp_path, (nodecheck.NOT_RUN, "timed out"), ["passive.fabric_manager"])
    assert held == ["passive.fabric_manager"]  # a held condition stays held while it cannot be read
    res, held = _fm_probe(tmp_path, (0, "active\n"), ["passive.fabric_manager"])
    assert "passive.fabric_manager" not in res.holding and held == []
