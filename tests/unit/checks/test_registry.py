"""The check registry: complete (every validator and burn-in check id is in it), consistent, documented."""

from __future__ import annotations

import ast
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.burnin.issue import _check_id as burnin_check_id
from clusterforge.burnin.model import COUNTER_PREFIX, TESTS
from clusterforge.certify.xid import policy
from clusterforge.checks import Event, by_id, decide, get, xid_check
from clusterforge.checks.docs import render
from clusterforge.checks.registry import base_id, problems
from clusterforge.cli import app
from tests.conftest import REPO, VALIDATORS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def validator_check_ids() -> set[str]:
    """`<area>.<check>` of every test function in validators/, as certify.plugin.check_id names them."""
    ids = set()
    for path in sorted(VALIDATORS.glob("test_*.py")):
        area = path.stem.removeprefix("test_")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                ids.add(f"{area}.{node.name.removeprefix('test_')}")
    return ids


def burnin_check_ids() -> set[str]:
    return {burnin_check_id(t) for t in TESTS} | {burnin_check_id(COUNTER_PREFIX + "symbol_error")}


def test_validators_found() -> None:
    ids = validator_check_ids()
    assert {"gpu.xid", "rdma.port", "performance.dcgm_diag", "bios.bios_attributes"} <= ids
    assert len(ids) > 40


def test_every_validator_check_is_registered() -> None:
    missing = sorted(validator_check_ids() - by_id().keys())
    assert missing == [], f"add these validator checks to src/clusterforge/checks/catalog.py: {missing}"


def test_every_burnin_check_is_registered() -> None:
    missing = sorted(burnin_check_ids() - by_id().keys())
    assert missing == [], f"add these burn-in checks to src/clusterforge/checks/catalog.py: {missing}"


def test_no_registered_check_without_a_producer() -> None:
    """A validator/burn-in entry whose check no longer exists is stale."""
    known = validator_check_ids() | burnin_check_ids()
    stale = sorted(c.id for c in by_id().values() if c.source != "passive" and c.id not in known)
    assert stale == []


def test_registry_is_consistent() -> None:
    assert problems() == []


def test_parameterised_ids_resolve() -> None:
    assert base_id("rdma.port[rail3]") == "rdma.port"
    assert get("performance.nvbandwidth[case=h2d]").id == "performance.nvbandwidth"


def test_every_xid_of_the_policy_has_a_check() -> None:
    pol = policy()
    for xid, rule in pol.rules.items():
        c = xid_check(xid)
        assert c.source == "passive"
        assert c.id in (f"passive.xid.{rule.cls}", f"passive.xid.{xid}")
    assert xid_check(79).id == "passive.xid.79"
    assert xid_check(13).id == "passive.xid.application"
    assert xid_check(9999).id == "passive.xid.fatal"  # not in the policy: default fatal


def test_passive_checks_named_by_the_issue_exist() -> None:
    for cid in (
        "passive.gpu_lost",
        "passive.row_remap_pending",
        "passive.nvlink_errors",
        "passive.rail_link_down",
        "passive.rail_link_flap",
        "passive.pfc_pause_storm",
        "passive.certificate_expiring",
        "passive.drift",
    ):
        assert by_id()[cid].mode == "passive"


# --- window / repeat rules ---------------------------------------------------------------------------


def ev(check: str, hours: float, component: str = "gpu0", code: str = "", node: str = "n1") -> Event:
    return Event(check, node, T0 + timedelta(hours=hours), component, code)


def test_no_event_no_decision() -> None:
    assert decide(by_id()["passive.xid.79"], "n1", [], T0) is None
    other = [ev("passive.xid.79", 0, node="n2")]
    assert decide(by_id()["passive.xid.79"], "n1", other, T0 + timedelta(hours=1)) is None


def test_one_fatal_xid_drains_with_remedies() -> None:
    d = decide(by_id()["passive.xid.79"], "n1", [ev("passive.xid.79", 0, code="79")], T0 + timedelta(hours=1))
    assert d is not None and d.action == "drain" and d.rule is None
    assert d.next_steps == ("reboot", "service")
    assert d.reason.startswith("clusterforge: passive.xid.79 gpu0 79: drain then reboot/service")


def test_same_fatal_xid_twice_in_24h_on_one_gpu_is_service() -> None:
    c = by_id()["passive.xid.fatal"]
    events = [ev(c.id, 0, code="119"), ev(c.id, 23, code="119")]
    d = decide(c, "n1", events, T0 + timedelta(hours=23, minutes=30))
    assert d is not None and d.action == "service" and d.ticket == "hardware"
    assert "(2x in 1 d)" in d.reason and "gpu0 119" in d.reason


def test_repeat_outside_the_window_or_on_another_gpu_does_not_escalate() -> None:
    c = by_id()["passive.xid.fatal"]
    apart = [ev(c.id, 0, code="119"), ev(c.id, 25, code="119")]
    d = decide(c, "n1", apart, T0 + timedelta(hours=25))
    assert d is not None and d.action == "drain"
    two_gpus = [ev(c.id, 0, "gpu0", "119"), ev(c.id, 1, "gpu1", "119")]
    assert decide(c, "n1", two_gpus, T0 + timedelta(hours=2)).action == "drain"  # type: ignore[union-attr]
    two_codes = [ev(c.id, 0, code="119"), ev(c.id, 1, code="120")]
    assert decide(c, "n1", two_codes, T0 + timedelta(hours=2)).action == "drain"  # type: ignore[union-attr]


def test_future_events_are_not_counted() -> None:
    c = by_id()["passive.xid.fatal"]
    events = [ev(c.id, 0, code="48"), ev(c.id, 5, code="48")]
    d = decide(c, "n1", events, T0 + timedelta(hours=1))
    assert d is not None and d.action == "drain" and d.events == 1


def test_link_flapping_three_times_in_an_hour_drains_with_a_cable_ticket() -> None:
    c = by_id()["passive.rail_link_flap"]
    flaps = [ev(c.id, m / 60, component="rail2") for m in (0, 20, 50)]
    assert decide(c, "n1", flaps[:2], T0 + timedelta(minutes=55)).action == "alert"  # type: ignore[union-attr]
    d = decide(c, "n1", flaps, T0 + timedelta(minutes=55))
    assert d is not None and d.action == "drain" and d.ticket == "cable" and "rail2" in d.reason
    later = decide(c, "n1", flaps, T0 + timedelta(minutes=75))  # the first flap left the window
    assert later is not None and later.action == "alert"


def test_reason_is_safe_for_a_pool_manager() -> None:
    c = by_id()["passive.xid.fatal"]
    d = decide(c, "n1", [ev(c.id, 0, component='gpu"0\n', code="x=1")], T0)
    assert d is not None
    assert "\n" not in d.reason and '"' not in d.reason and "=" not in d.reason and len(d.reason) <= 255


# --- docs/checks.md ----------------------------------------------------------------------------------


def test_committed_docs_match_the_registry() -> None:
    committed = (REPO / "docs" / "checks.md").read_text()
    assert committed == render(), (
        "docs/checks.md is stale: run `clusterforge checks docs --output docs/checks.md`"
    )


def test_docs_name_every_check() -> None:
    text = render()
    missing = [cid for cid in by_id() if f"`{cid}`" not in text]
    assert missing == []


@pytest.mark.parametrize(("command", "rendered"), [("docs", render)])
def test_cli_output_and_check(tmp_path: Path, command: str, rendered: Callable[[], str]) -> None:
    out = tmp_path / "rendered"
    assert CliRunner().invoke(app, ["checks", command]).stdout == rendered()
    r = CliRunner().invoke(app, ["checks", command, "--output", str(out)])
    assert r.exit_code == 0 and out.read_text() == rendered()
    assert CliRunner().invoke(app, ["checks", command, "--output", str(out), "--check"]).exit_code == 0
    out.write_text(rendered() + "edited\n")
    r = CliRunner().invoke(app, ["checks", command, "--output", str(out), "--check"])
    assert r.exit_code == 3 and f"run `clusterforge checks {command} --output {out}`" in r.stderr
    assert out.read_text() == rendered() + "edited\n", "--check changes nothing"


@pytest.mark.parametrize("source", ["validator", "burnin", "passive"])
def test_cli_list(source: str) -> None:
    r = CliRunner().invoke(app, ["checks", "list", "--source", source])
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines and all(len(line.split("\t")) == 5 for line in lines)
