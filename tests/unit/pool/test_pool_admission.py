"""Admission policy: decide() (pure) on the lab plan, and apply() through the file pool manager."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from clusterforge.plan import Plan
from clusterforge.pool.admission import HistoryEvent, apply, decide, history_from_store, is_flapping
from clusterforge.pool.base import HOLD_REASON, ResumeRefused
from clusterforge.pool.file import FilePool
from clusterforge.records import Store, signing
from clusterforge.records import certificate as cm

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
NODE = "ib-01"


@pytest.fixture(scope="module")
def plan(lab_plan: Plan) -> dict[str, Any]:
    return dict(lab_plan.doc)


def _digest(plan: dict[str, Any], node: str = NODE) -> str:
    return str(next(n for n in plan["nodes"] if n["name"] == node)["expectation_digest"])


def cert(
    plan: dict[str, Any],
    *,
    node: str = NODE,
    tier: str = "quick",
    failed: tuple[str, ...] = (),
    errored: tuple[str, ...] = (),
    hours_ago: float = 1,
    digest: str | None = None,
    signer: signing.SigningKey | None = None,
    validity_hours: float = 720,
) -> dict[str, Any]:
    checks = [{"id": "gpu.count", "status": "pass", "expected": 8, "found": 8, "evidence": {}}]
    checks += [{"id": c, "status": "fail", "expected": 1, "found": 0, "evidence": {}} for c in failed]
    checks += [{"id": c, "status": "error", "expected": 1, "found": None, "evidence": {}} for c in errored]
    return cm.build(
        cluster="lab",
        node=node,
        expectation_digest=digest or _digest(plan, node),
        plan_hash=plan["plan_hash"],
        tier=tier,
        checks=checks,
        issued_at=NOW - timedelta(hours=hours_ago),
        validity_hours=validity_hours,
        signer=signer,
    )


def ev(hours_ago: float, kind: str) -> HistoryEvent:
    return HistoryEvent(NOW - timedelta(hours=hours_ago), kind)


def test_lab_plan_policy_is_what_these_tests_assume(plan: dict[str, Any]) -> None:
    assert plan["certification"]["join_tiers"] == ["quick"]
    assert plan["certification"]["flap_window_hours"] == 24


def test_admits_with_a_valid_passing_certificate(plan: dict[str, Any]) -> None:
    c = cert(plan)
    d = decide(NODE, plan, [c], [ev(1, "pass")], NOW)
    assert (d.action, d.certificates) == ("admit", (c,))


def test_no_certificate_drains(plan: dict[str, Any]) -> None:
    d = decide(NODE, plan, [cert(plan, node="ib-02")], [], NOW)
    assert (d.action, d.reason) == ("drain", "clusterforge: no quick certificate")


def test_failed_certificate_drains_with_the_failed_checks(plan: dict[str, Any]) -> None:
    d = decide(NODE, plan, [cert(plan, failed=("nic.link", "gpu.ecc"))], [], NOW)
    assert (d.action, d.reason) == ("drain", "clusterforge: failed gpu.ecc,nic.link")
    d = decide(NODE, plan, [cert(plan, errored=("dcgm.diag",))], [], NOW)
    assert (d.action, d.reason) == ("drain", "clusterforge: quick: could not run dcgm.diag")


def test_newest_certificate_of_a_tier_counts(plan: dict[str, Any]) -> None:
    old_pass, new_fail = cert(plan, hours_ago=5), cert(plan, hours_ago=1, failed=("gpu.xid",))
    assert decide(NODE, plan, [old_pass, new_fail], [], NOW).action == "drain"
    fixed = cert(plan, hours_ago=0.5)  # re-certified after the fix: re-admitted
    assert decide(NODE, plan, [old_pass, new_fail, fixed], [], NOW).action == "admit"


def test_certificate_for_an_old_expectation_digest_drains(plan: dict[str, Any]) -> None:
    stale = cert(plan, digest="0" * 64)
    d = decide(NODE, plan, [stale], [], NOW)
    assert d.action == "drain" and "old expectation digest" in d.reason
    changed = copy.deepcopy(
        plan
    )  # the plan changes this node's expectations: its certificate no longer counts
    good = cert(plan)
    next(n for n in changed["nodes"] if n["name"] == NODE)["expectation_digest"] = "f" * 64
    assert decide(NODE, plan, [good], [], NOW).action == "admit"
    assert decide(NODE, changed, [good], [], NOW).action == "drain"


def _foreign() -> signing.SigningKey:
    private = Ed25519PrivateKey.generate()
    return signing.SigningKey(signing.kid_of(private.public_key()), private, Path("/elsewhere"))


def test_expired_forged_and_unsigned_certificates_drain(plan: dict[str, Any]) -> None:
    expired = cert(plan, hours_ago=800)
    assert decide(NODE, plan, [expired], [], NOW).reason == "clusterforge: quick certificate expired"
    failed = cert(plan, failed=("gpu.ecc",))
    tampered = {**failed, "verdict": "pass", "checks": [{**c, "status": "pass"} for c in failed["checks"]]}
    tampered["digest"] = cm.compute_digest(tampered)  # the digest recomputed: not a seal
    d = decide(NODE, plan, [tampered], [], NOW)
    assert d.action == "drain" and "signature does not verify" in d.reason
    unsigned = {k: v for k, v in cert(plan).items() if k != "signature"}
    d = decide(NODE, plan, [unsigned], [], NOW)
    assert d.action == "drain" and "unsigned" in d.reason
    v1 = {**{k: v for k, v in cert(plan).items() if k not in ("signature", "kid")}, "hmac": "0" * 64}
    v1["schema"] = "clusterforge.certificate/v1"
    d = decide(NODE, plan, [v1], [], NOW)
    assert (d.action, d.reason) == (
        "drain",
        "clusterforge: quick certificate invalid (unsigned (schema v1): re-certify)",
    )
    forged = cert(plan, signer=_foreign())  # made from scratch, signed with a key of one's own
    d = decide(NODE, plan, [forged], [], NOW)
    assert d.action == "drain" and "unknown or untrusted key" in d.reason
    swapped = {**forged, "kid": signing.signing_key().kid}
    swapped["digest"] = cm.compute_digest(swapped)
    assert decide(NODE, plan, [swapped], [], NOW).action == "drain"
    assert decide(NODE, plan, [cert(plan)], [], NOW).action == "admit"


def test_a_forged_newer_pass_does_not_outweigh_a_real_failure(plan: dict[str, Any]) -> None:
    real_fail = cert(plan, hours_ago=2, failed=("gpu.ecc",))
    forged_pass = cert(plan, hours_ago=1, signer=_foreign())
    d = decide(NODE, plan, [real_fail, forged_pass], [], NOW)
    assert (d.action, d.reason) == ("drain", "clusterforge: failed gpu.ecc")


def test_decide_uses_only_the_trusted_keys_it_is_given(plan: dict[str, Any]) -> None:
    other = _foreign()
    c = cert(plan, signer=other)
    assert decide(NODE, plan, [c], [], NOW, trusted={other.kid: other.public}).action == "admit"
    assert decide(NODE, plan, [cert(plan)], [], NOW, trusted={other.kid: other.public}).action == "drain"
    assert decide(NODE, plan, [cert(plan)], [], NOW, trusted={}).action == "drain"


def test_every_join_tier_is_required(plan: dict[str, Any]) -> None:
    strict = copy.deepcopy(plan)
    strict["certification"]["join_tiers"] = ["quick", "full"]
    quick = cert(plan, tier="quick")
    d = decide(NODE, strict, [quick], [], NOW)
    assert (d.action, d.reason) == ("drain", "clusterforge: no full certificate")
    full = cert(plan, tier="full")
    d = decide(NODE, strict, [quick, full], [], NOW)
    assert d.action == "admit" and {c["tier"] for c in d.certificates} == {"quick", "full"}


def test_node_not_in_plan_drains(plan: dict[str, Any]) -> None:
    assert decide("gpu-9999", plan, [], [], NOW).action == "drain"


@pytest.mark.parametrize(
    ("events", "flapping"),
    [
        ([ev(20, "fail"), ev(10, "pass"), ev(1, "fail")], True),
        ([ev(20, "error"), ev(10, "pass"), ev(1, "fail")], True),  # an error does not pass either
        ([ev(20, "fail"), ev(15, "fail"), ev(10, "pass"), ev(5, "pass"), ev(1, "fail")], True),
        ([ev(30, "fail"), ev(10, "pass"), ev(1, "fail")], False),  # the first failure is outside 24 h
        ([ev(20, "pass"), ev(10, "fail"), ev(1, "pass")], False),  # pass, fail, pass: a fix, not a flap
        ([ev(3, "fail"), ev(2, "fail"), ev(1, "pass")], False),
        ([], False),
    ],
)
def test_flapping(events: list[HistoryEvent], flapping: bool) -> None:
    assert is_flapping(events, NOW, 24) is flapping


def test_flapping_node_is_held_even_with_a_fresh_pass(plan: dict[str, Any]) -> None:
    history = [ev(20, "fail"), ev(10, "pass"), ev(5, "fail"), ev(0.5, "pass")]
    d = decide(NODE, plan, [cert(plan, hours_ago=0.5)], history, NOW)
    assert (d.action, d.reason) == ("hold", HOLD_REASON)


def test_hold_is_sticky_until_an_override(plan: dict[str, Any]) -> None:
    good = cert(plan, hours_ago=0.1)
    held = [ev(100, "fail"), ev(90, "pass"), ev(80, "fail"), ev(79, "hold")]  # flapped long ago
    assert decide(NODE, plan, [good], held, NOW).action == "hold"  # window passed: still held
    assert decide(NODE, plan, [good], [*held, ev(1, "override")], NOW).action == "admit"
    flapping_then_override = [ev(20, "fail"), ev(10, "pass"), ev(5, "fail"), ev(4, "override")]
    d = decide(NODE, plan, [cert(plan, hours_ago=5, failed=("gpu.ecc",))], flapping_then_override, NOW)
    assert d.action == "drain"  # override clears the hold, but a failed node is still not admitted


# --- apply -------------------------------------------------------------------------------------------


def test_apply_through_the_file_manager_and_records_events(plan: dict[str, Any], tmp_path: Path) -> None:
    pool = FilePool(tmp_path / "pool.json")
    with Store(tmp_path / "r.db") as store:
        failed = decide(NODE, plan, [cert(plan, failed=("gpu.ecc",))], [], NOW)
        assert apply(failed, pool, store=store) == "drained"
        assert pool.status([NODE])[NODE].reason == "clusterforge: failed gpu.ecc"
        good = decide(NODE, plan, [cert(plan, tier="quick")], [], NOW)
        assert apply(good, pool, store=store) == "admitted"
        s = pool.status([NODE])[NODE]
        assert s.state == "idle" and s.labels["clusterforge.io/certified"] == "true"
        assert s.labels["clusterforge.io/expectation-digest"] == _digest(plan)
        hold = decide(NODE, plan, [], [ev(3, "fail"), ev(2, "pass"), ev(1, "fail")], NOW)
        assert apply(hold, pool, store=store) == "held"
        assert pool.status([NODE])[NODE].reason == HOLD_REASON
        with pytest.raises(ResumeRefused):
            apply(good, pool, store=store)  # a hold is only lifted with force
        assert apply(good, pool, store=store, force=True) == "admitted"
        assert [e.action for e in store.pool_events(NODE)] == ["drain", "admit", "hold", "admit"]
        hist = history_from_store(store, NODE)
        assert [e.kind for e in hist] == ["hold"]


def test_apply_leaves_someone_elses_drain(plan: dict[str, Any], tmp_path: Path) -> None:
    pool = FilePool(tmp_path / "pool.json")
    pool.drain(NODE, "placeholder")
    data = (tmp_path / "pool.json").read_text().replace("clusterforge: placeholder", "admin: PSU swap")
    (tmp_path / "pool.json").write_text(data)
    failed = decide(NODE, plan, [cert(plan, failed=("gpu.ecc",))], [], NOW)
    assert apply(failed, pool) == "left drained by someone else"
    assert pool.status([NODE])[NODE].reason == "admin: PSU swap"


def test_history_from_store_uses_finished_certify_runs_only(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        for verdict, status in (("fail", "failed"), ("pass", "passed"), ("fail", None)):
            rid = store.start_run("certify", "lab", tier="quick")
            store.add_node_result(rid, NODE, verdict)
            if status:
                store.finish_run(rid, status)
        drift = store.start_run("drift", "lab")
        store.add_node_result(drift, NODE, "fail")
        store.finish_run(drift, "failed")
        store.record_pool_event(NODE, "override", "checked by hand")
        assert [e.kind for e in history_from_store(store, NODE)] == ["fail", "pass", "override"]
