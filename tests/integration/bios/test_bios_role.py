"""The bios role and playbooks/bios.yml against real Redfish services (sushy-emulator, TLS + basic auth)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from bios_rig import BMC_NODES, Rig

from clusterforge.lab.bmc.secrets import ensure_tls
from clusterforge.spec import bios

WANT = bios.inventory_map("generic", {"acs_disable": True})["set"]


def _wanted(attrs: dict[str, object]) -> dict[str, object]:
    return {k: attrs[k] for k in WANT}


def test_check_mode_reads_and_changes_nothing(fresh: Rig) -> None:
    before = {n: fresh.bios(n) for n in BMC_NODES}
    res = fresh.run(check=True)
    assert res.rc == 0, res.tasks
    assert {h: r.status for h, r in res.hosts.items()} == {
        "roce-01": "changed",
        "roce-02": "changed",
        "ib-01": "ok",
        "ib-02": "ok",
    }
    would = [t for t in res.tasks if t.task == "Report what a run would stage" and t.status == "changed"]
    assert len(would) == 2
    assert {n: fresh.bios(n) for n in BMC_NODES} == before
    assert not fresh.pending_file("roce-01").exists()


def test_stage_record_pending_and_second_run_changes_nothing(fresh: Rig) -> None:
    res = fresh.run()
    assert res.rc == 0, [(h.host, h.failed_task, h.message) for h in res.failed_hosts]
    current, staged = fresh.bios("roce-01")
    assert _wanted(staged) == WANT, "staged in Bios/Settings"
    assert _wanted(current) != WANT, "not applied before a reset"
    line = fresh.record("roce-01").strip()
    assert line.startswith("bios: ") and all(f"{k}={v}" in line for k, v in WANT.items())
    fact = json.loads((fresh.tmp / "nodes" / "roce-01.pending.fact").read_text())
    assert fact["reasons"] == {"bios": [line]}, "kept with the other roles' reasons"
    again = fresh.run()
    assert again.rc == 0
    assert {h: r.changed for h, r in again.hosts.items()} == {h: 0 for h in again.hosts}
    assert fresh.record("roce-01").strip() == line


def test_reset_applies_the_staged_settings_and_clears_the_record(fresh: Rig) -> None:
    assert fresh.run().rc == 0
    fresh.reset("roce-01")  # what the loop's reboot does to a server: the BMC applies its staged job
    current, _ = fresh.bios("roce-01")
    assert _wanted(current) == WANT
    res = fresh.run()
    assert res.rc == 0
    assert "bios:" not in fresh.record("roce-01")
    assert fresh.record("roce-02").startswith("bios: "), "roce-02 was not reset"
    assert res.hosts["roce-01"].changed == 1  # only the record went
    assert fresh.run().hosts["roce-01"].changed == 0


def test_role_reset_handler(fresh: Rig) -> None:
    res = fresh.run(bios_reset="graceful")
    assert res.rc == 0
    assert any(t.task == "Reset the system through the BMC" and t.status != "skipped" for t in res.tasks)
    for n in BMC_NODES:
        current, staged = fresh.bios(n)
        assert _wanted(current) == WANT and _wanted(staged) == WANT
        assert "bios:" not in fresh.record(n)
    assert fresh.run().hosts["roce-01"].changed == 0


def test_node_boot_applies_the_staged_settings(fresh: Rig) -> None:
    """A lab node rebooted by the OS (provisioning loop): the BMC sees the new boot in state.json."""
    assert fresh.run().rc == 0
    state = fresh.tmp / "state" / "nodes" / "roce-02" / "state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"state": "running", "boots": 2, "since": time.time() + 1}))
    try:
        current, _ = fresh.bios("roce-02")
        assert _wanted(current) == WANT
        assert _wanted(fresh.bios("roce-01")[0]) != WANT
    finally:
        state.unlink()


def _failed(res: object, node: str) -> str:
    hr = res.hosts[node]  # type: ignore[attr-defined]
    assert hr.status == "failed", hr
    return f"{hr.failed_task}: {hr.message}"


def _untouched(rig: Rig) -> None:
    for n in BMC_NODES:
        current, staged = rig.bios(n)
        assert staged == current, "nothing staged"
        assert not rig.pending_file(n).exists()


def test_unreachable_bmc_fails_clearly_and_changes_nothing(fresh: Rig) -> None:
    dead = {"address": "127.0.0.1:9", "vendor": "generic"}
    res = fresh.run(clusterforge_bmc=dead)
    msg = _failed(res, "roce-01")
    assert "127.0.0.1:9" in msg and "refused" in msg.lower() and "Nothing was changed" in msg
    _untouched(fresh)


def test_bad_credentials_fail_clearly_and_change_nothing(fresh: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_BMC_PASSWORD", "not-the-password")
    res = fresh.run()
    msg = _failed(res, "roce-01")
    assert "401" in msg and "Nothing was changed" in msg
    _untouched(fresh)


def test_untrusted_certificate_fails(fresh: Rig, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other_ca, _, _ = ensure_tls(other, ["127.0.0.1"])
    msg = _failed(fresh.run(bios_ca_path=str(other_ca)), "roce-01")
    assert "CERTIFICATE_VERIFY_FAILED" in msg or "certificate verify failed" in msg
    _untouched(fresh)


def test_unknown_attribute_fails_and_changes_nothing(fresh: Rig) -> None:
    res = fresh.run(bios_extra_attributes={"PcieTenBitTag": "Enabled"})
    msg = _failed(res, "roce-01")
    assert "does not offer PcieTenBitTag" in msg and "Nothing was changed" in msg
    _untouched(fresh)


def test_bmc_refusing_a_value_fails_after_staging_nothing_else(fresh: Rig) -> None:
    """A name the BMC has but a value it rejects (HTTP 400 on the PATCH): the role says so, the BMC keeps
    nothing of the request."""
    res = fresh.run(bios_extra_attributes={"NumaNodesPerSocket": 9})
    msg = _failed(res, "roce-01")
    assert "Fail when the BMC refused the change" in msg and "NumaNodesPerSocket" in msg
    assert "HTTP Error 400 on PATCH" in msg
    _untouched(fresh)


def test_no_secret_in_output_or_artifacts(
    fresh: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs that carried a password (staging, the reset handler, a refused login): it is in no event, no
    stdout, no kept artifact. ansible-runner records the whole environment in its `command` artifact and
    env/ folder; `run_playbook` never keeps those, so a password given as CLUSTERFORGE_BMC_PASSWORD is not
    kept either."""
    password = fresh.creds["password"]
    wrong = "wrong-Pa55word-zz9"
    runs: list[tuple[dict[str, Any], str | None, int]] = [
        ({}, None, 0),
        ({"bios_reset": "graceful"}, None, 0),
        ({}, password, 0),
        ({}, wrong, 2),
    ]
    for i, (extra, env_pw, rc) in enumerate(runs):
        if env_pw is None:
            monkeypatch.delenv("CLUSTERFORGE_BMC_PASSWORD", raising=False)
        else:
            monkeypatch.setenv("CLUSTERFORGE_BMC_PASSWORD", env_pw)
        keep = tmp_path / f"run{i}"
        res = fresh.run(keep=keep, **extra)
        assert res.rc == rc, i
        files = [p for p in keep.rglob("*") if p.is_file()]
        assert any(p.parent.name == "job_events" for p in files) and any(p.name == "stdout" for p in files)
        events = repr([(t.task, t.message, t.stdout) for t in res.tasks]).encode()
        for secret in (password, wrong):
            assert secret.encode() not in events, f"secret in the events of run {i}"
            holders = [p for p in files if secret.encode() in p.read_bytes()]
            assert holders == [], f"secret in {holders} (run {i}, password from env: {bool(env_pw)})"


def test_other_roles_reasons_are_kept(fresh: Rig) -> None:
    """The record is shared: a reason another role recorded stays beside ours (and ours beside it)."""
    fact = fresh.tmp / "nodes" / "roce-01.pending.fact"
    other = "os_tuning: kernel command line needs a reboot (running kernel lacks: iommu=pt)"
    fact.write_text(json.dumps({"reboot_required": True, "reasons": {"os_tuning": [other]}}))
    assert fresh.run().rc == 0
    lines = fresh.record("roce-01").splitlines()
    assert lines[0].startswith("bios: ") and lines[1] == other
    fresh.reset("roce-01")
    assert fresh.run().rc == 0
    assert fresh.record("roce-01").splitlines() == [other]
