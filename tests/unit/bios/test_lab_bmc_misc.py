"""Lab BMC helpers (addresses, TLS, account, reset hook) and the validator's verdict message."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from clusterforge.certify.checks import CheckFailed
from clusterforge.lab.bmc import default_address, hooks, plan_bmcs
from clusterforge.lab.bmc.secrets import credentials_env, ensure_account, ensure_tls
from clusterforge.spec import bios
from tests.conftest import REPO

VALIDATOR = REPO / "validators" / "test_bios.py"


def test_plan_bmcs_takes_the_plan_addresses() -> None:
    doc = {
        "cluster": "lab",
        "nodes": [
            {"name": "a", "ordinal": 0, "bmc": {"address": "127.0.0.1:8441", "vendor": "generic"}},
            {"name": "b", "ordinal": 1},
            {"name": "c", "ordinal": 2, "bmc": {"address": "10.244.0.1:9000", "vendor": "generic"}},
        ],
    }
    got = plan_bmcs(doc)
    assert [(b.node, b.url) for b in got] == [
        ("a", "https://127.0.0.1:8441"),
        ("c", "https://10.244.0.1:9000"),
    ]
    assert got[0].uuid != got[1].uuid and got[0].uuid == plan_bmcs(doc)[0].uuid
    assert default_address(3) == "127.0.0.1:8444"


def test_tls_and_account(tmp_path: Path) -> None:
    ca, cert, key = ensure_tls(tmp_path, ["127.0.0.1", "10.244.0.1"])
    text = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-noout", "-text"], capture_output=True, text=True, check=True
    ).stdout
    assert "IP Address:10.244.0.1" in text and "IP Address:127.0.0.1" in text
    subprocess.run(["openssl", "verify", "-CAfile", str(ca), str(cert)], check=True, capture_output=True)
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    before = cert.read_bytes()
    ensure_tls(tmp_path, ["127.0.0.1", "10.244.0.1"])
    assert cert.read_bytes() == before, "unchanged addresses keep the certificate"
    creds = ensure_account(tmp_path)
    assert ensure_account(tmp_path) == creds
    user, digest = (tmp_path / "htpasswd").read_text().strip().split(":", 1)
    assert user == creds["user"] and bcrypt.checkpw(creds["password"].encode(), digest.encode())
    env = credentials_env(tmp_path)
    assert "CLUSTERFORGE_BMC_PASSWORD" not in env, "the password itself stays out of the environment"
    assert Path(env["CLUSTERFORGE_BMC_PASSWORD_FILE"]).read_text() == creds["password"]
    assert oct((tmp_path / "password").stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "credentials.json").stat().st_mode & 0o777) == "0o600"


class FakeLab:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def exec(self, name: str, argv: list[str], input: None = None, timeout: float = 60.0) -> None:
        self.calls.append(("exec", name, *argv))

    def node_up(self, name: str, wait: bool = False, timeout: float = 60.0) -> None:
        self.calls.append(("up", name))

    def node_down(self, name: str) -> None:
        self.calls.append(("down", name))


@pytest.mark.parametrize(
    ("reset", "calls"),
    [
        ("GracefulRestart", [("exec", "n", "systemctl", "reboot")]),
        ("ForceRestart", [("down", "n"), ("up", "n")]),
        ("ForceOff", [("down", "n")]),
        ("On", [("up", "n")]),
    ],
)
def test_reset_hook_maps_redfish_resets_to_the_lab(reset: str, calls: list[tuple[str, ...]]) -> None:
    lab = FakeLab()
    hooks.apply(lab, "n", reset)
    assert lab.calls == calls
    with pytest.raises(ValueError, match="Nmi"):
        hooks.apply(lab, "n", "Nmi")


def _validator() -> Any:
    spec = importlib.util.spec_from_file_location("validator_test_bios", VALIDATOR)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validator_mismatch_and_staged_hint() -> None:
    v = _validator()
    exp = bios.resolve("generic", {"acs_disable": True})
    good = {e.name: e.value for e in exp}
    v.judge("n1", "bmc", "generic", exp, good, {}, "exact")
    with pytest.raises(CheckFailed) as err:
        v.judge("n1", "bmc", "generic", exp, good | {"PcieAts": "Disabled"}, {"PcieAts": "Enabled"}, "exact")
    msg = str(err.value)
    assert "expected PcieAts=Enabled; found PcieAts=Disabled (Enabled staged: reboot pending)" in msg
    assert "--tags bios --limit n1" in msg
    with pytest.raises(CheckFailed, match="Bogus=<absent>"):
        v.judge("n1", "bmc", "generic", exp, good, {}, "exact", {"Bogus": "On"})
