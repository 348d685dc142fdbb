"""validators/test_bios.py (tier `full`) against the real Redfish services, run as `clusterforge certify`
runs validators: pytest on validators/ with --plan and --cf-results, one verdict line per check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bios_rig import BMC_NODES, Rig

from tests.conftest import REPO


def certify(rig: Rig, out: Path, **env: str) -> dict[str, dict[str, Any]]:
    results = out / "results.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "validators/test_bios.py",
            "-m",
            "full",
            "-q",
            "--plan",
            str(rig.inventory / "plan.json"),
            "--cf-results",
            str(results),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CLUSTERFORGE_BMC_CA": str(rig.ca), **env},
    )
    lines = [json.loads(ln) for ln in results.read_text().splitlines()] if results.exists() else []
    checks = {r["node"]: r for r in lines if r.get("kind") == "check"}
    assert checks, proc.stdout[-3000:] + proc.stderr[-3000:]
    return checks


def test_mismatch_names_attribute_expected_and_found_then_passes(fresh: Rig, tmp_path: Path) -> None:
    got = certify(fresh, tmp_path / "a")
    assert {n: r["verdict"] for n, r in got.items()} == {
        "roce-01": "fail",
        "roce-02": "fail",
        "ib-01": "skip",
        "ib-02": "skip",
    }
    r = got["roce-01"]
    assert "PcieAts=Enabled" in r["expected"] and "PcieAts=Disabled" in r["found"]
    assert "PowerProfile=MaximumPerformance" in r["expected"] and "PowerProfile=Balanced" in r["found"]
    assert "--tags bios --limit roce-01" in r["fix"]

    assert fresh.run().rc == 0  # staged, not applied: still a fail, saying a reboot is pending
    r = certify(fresh, tmp_path / "b")["roce-01"]
    assert r["verdict"] == "fail" and "(Enabled staged: reboot pending)" in r["found"]

    for n in BMC_NODES:
        fresh.reset(n)
    got = certify(fresh, tmp_path / "c")
    assert got["roce-01"]["verdict"] == "pass" and got["roce-02"]["verdict"] == "pass"


def test_unreadable_bmc_is_an_error_not_a_pass(fresh: Rig, tmp_path: Path) -> None:
    wrong_ca = certify(fresh, tmp_path / "a", CLUSTERFORGE_BMC_CA="/etc/ssl/certs/ca-certificates.crt")
    assert wrong_ca["roce-01"]["verdict"] == "error"
    assert "CERTIFICATE_VERIFY_FAILED" in wrong_ca["roce-01"]["message"]
    bad_login = certify(fresh, tmp_path / "b", CLUSTERFORGE_BMC_PASSWORD="nope")
    assert bad_login["roce-01"]["verdict"] == "error" and "HTTP 401" in bad_login["roce-01"]["message"]
    assert "nope" not in json.dumps(bad_login)
