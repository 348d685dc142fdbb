"""The node-side health check: standard library only, and in agreement with the validators' Xid parser and
the registry's window rules (`checks.rules.decide`) on the same inputs."""

from __future__ import annotations

import ast
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusterforge.checks import registry
from clusterforge.checks.node_policy import NODE_CHECKS, check_policy, node_policy
from clusterforge.checks.rules import Event, decide
from clusterforge.health import nodecheck
from clusterforge.hw import xid as hw_xid

REAL = Path(__file__).parents[2] / "fixtures/real"


def test_standard_library_only() -> None:
    tree = ast.parse(Path(nodecheck.__file__).read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods - {"__future__"} <= set(sys.stdlib_module_names), mods


@pytest.mark.parametrize("path", sorted(REAL.glob("xid__*")), ids=lambda p: p.name[:40])
def test_xid_lines_agree_with_the_validators_parser(path: Path) -> None:
    text = path.read_text()
    theirs = hw_xid.parse(text)
    ours = nodecheck.xids(text.splitlines())
    assert [(b, x) for b, x in ours if x != 79 or (b, x) in {(e.pci_bus_id, e.xid) for e in theirs}] == ours
    xid_lines = [(e.pci_bus_id, e.xid) for e in theirs if not e.gpu_lost]
    assert [o for o in ours if o in xid_lines or o[1] != 79] == xid_lines or not xid_lines
    # a GPU lost without an Xid line: ours sees the single-line form; the GPU count check sees the rest
    lost = {e.pci_bus_id for e in theirs if e.gpu_lost}
    assert {b for b, x in ours if x == 79} - {b for b, _ in xid_lines} <= lost


def _events(rng: random.Random, check: str, now: datetime) -> list[Event]:
    comps, codes = ["gpu0", "gpu1", "rail2"], ["79", "48", ""]
    return [
        Event(
            check,
            "n1",
            now - timedelta(seconds=rng.choice([10, 600, 3000, 7000, 40000, 90000, 2_000_000])),
            rng.choice(comps),
            rng.choice(codes),
        )
        for _ in range(rng.randint(1, 6))
    ]


@pytest.mark.parametrize("check", NODE_CHECKS)
def test_decisions_match_the_registry(check: str) -> None:
    rng = random.Random(check)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    pol = check_policy(check)
    for _ in range(200):
        events = _events(rng, check, now)
        theirs = decide(registry.get(check), "n1", events, now)
        as_dicts = [
            {"check": e.check, "at": e.at.timestamp(), "component": e.component, "code": e.code}
            for e in events
        ]
        ours = nodecheck.decide(check, pol, as_dicts, now.timestamp())
        assert theirs is not None and ours is not None
        assert (ours["action"], nodecheck.reason(ours)) == (theirs.action, theirs.reason)


def test_xid_codes_map_to_their_registry_checks() -> None:
    cfg = node_policy()
    for code in (79, 48, 64, 13, 31, 43, 94, 119, 999):
        assert nodecheck.xid_check(cfg, code) == registry.xid_check(code).id, code


def test_reason_is_safe_and_bounded() -> None:
    text = nodecheck.sanitize("clusterforge: x='1'\n" + "y" * 400)
    assert len(text) == 200 and "'" not in text and "\n" not in text and "=" not in text


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(node_policy()))
    cfg = {
        "gpu_count": 8,
        "rails": [],
        "fabric_manager": False,
        "dcgm_exporter_url": "http://127.0.0.1:1/metrics",  # nothing listens: an error, not a fault
        "state_dir": str(tmp_path / "state"),
        "textfile": "",
        "policy": str(policy),
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
    cfg = {
        "gpu_count": 0,
        "rails": [],
        "fabric_manager": True,
        "dcgm_exporter_url": "http://127.0.0.1:1/x",
        "state_dir": str(tmp_path / "state"),
    }
    cfg.update(node_policy())
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
