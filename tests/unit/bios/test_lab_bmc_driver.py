"""The lab BMC's BIOS driver (sushy fake-driver subclass): validation, staging, reset and boot semantics."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import flask
import pytest
from sushy_tools import error

from clusterforge.lab.bmc import registry
from clusterforge.lab.bmc.driver import BiosFakeDriver, check_value

UUID = "5d7e0e0a-2c46-5f3b-9d0e-2f5f7c1d0a11"


def make(tmp_path: Path, **extra: Any) -> BiosFakeDriver:
    reg = registry()
    system: dict[str, Any] = {
        "uuid": UUID,
        "name": "n1",
        "power_state": "On",
        "nics": [],
        "bios_current": {k: v["default"] for k, v in reg.items()},
        "bios_pending": {},
        "bios_pending_since": None,
    }
    config = {
        "SUSHY_EMULATOR_STATE_DIR": str(tmp_path / "state"),
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [system],
        "CLUSTERFORGE_BIOS_REGISTRY": reg,
        **extra,
    }
    drv: BiosFakeDriver = BiosFakeDriver.initialize(config, logging.getLogger("test"))()
    return drv


def settings_view(drv: BiosFakeDriver) -> dict[str, Any]:
    with flask.Flask(__name__).test_request_context(f"/redfish/v1/Systems/{UUID}/BIOS/Settings"):
        return drv.get_bios(UUID)


def test_registry_checks() -> None:
    reg = registry()
    assert check_value(reg, "PcieAts", "Enabled") is None
    assert "PropertyUnknown" in str(check_value(reg, "Bogus", 1))
    assert "PropertyValueNotInList" in str(check_value(reg, "PcieAts", "On"))
    assert "integer" in str(check_value(reg, "NumaNodesPerSocket", "2"))
    assert "OutOfRange" in str(check_value(reg, "NumaNodesPerSocket", 9))
    assert check_value(reg, "NumaNodesPerSocket", 2) is None


def test_patch_is_staged_not_applied(tmp_path: Path) -> None:
    drv = make(tmp_path)
    drv.set_bios(UUID, {"PcieAts": "Enabled", "NumaNodesPerSocket": 2})
    assert drv.get_bios(UUID)["PcieAts"] == "Disabled"
    staged = settings_view(drv)
    assert staged["PcieAts"] == "Enabled" and staged["NumaNodesPerSocket"] == 2
    assert isinstance(staged["NumaNodesPerSocket"], int)


def test_bad_patch_changes_nothing(tmp_path: Path) -> None:
    drv = make(tmp_path)
    with pytest.raises(error.BadRequest, match="Bogus"):
        drv.set_bios(UUID, {"PcieAts": "Enabled", "Bogus": "x"})
    assert settings_view(drv) == drv.get_bios(UUID)


@pytest.mark.parametrize("reset", ["GracefulRestart", "ForceRestart", "PowerCycle"])
def test_a_reset_applies_the_staged_values(tmp_path: Path, reset: str) -> None:
    drv = make(tmp_path)
    drv.set_bios(UUID, {"PcieAts": "Enabled"})
    drv.set_power_state(UUID, reset)
    assert drv.get_bios(UUID)["PcieAts"] == "Enabled"
    assert drv.get_power_state(UUID) == "On"


def test_power_off_keeps_staged_values_until_power_on(tmp_path: Path) -> None:
    drv = make(tmp_path)
    drv.set_bios(UUID, {"SriovEnable": "Enabled"})
    drv.set_power_state(UUID, "ForceOff")
    assert drv.get_power_state(UUID) == "Off" and drv.get_bios(UUID)["SriovEnable"] == "Disabled"
    drv.set_power_state(UUID, "On")
    assert drv.get_bios(UUID)["SriovEnable"] == "Enabled"


def test_state_survives_a_bmc_restart(tmp_path: Path) -> None:
    make(tmp_path).set_bios(UUID, {"PcieAcs": "Disabled"})
    assert settings_view(make(tmp_path))["PcieAcs"] == "Disabled"


def test_a_node_boot_after_the_change_applies_it(tmp_path: Path) -> None:
    state = tmp_path / "nodes" / "n1" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"state": "running", "since": time.time() - 60}))
    drv = make(tmp_path, CLUSTERFORGE_BOOT_STATE_FILE=str(state))
    drv.set_bios(UUID, {"PcieAts": "Enabled"})
    assert drv.get_bios(UUID)["PcieAts"] == "Disabled", "a boot before the change applies nothing"
    state.write_text(json.dumps({"state": "rebooting", "since": time.time() + 1}))
    assert drv.get_bios(UUID)["PcieAts"] == "Disabled", "not booted yet"
    state.write_text(json.dumps({"state": "running", "since": time.time() + 1}))
    assert drv.get_bios(UUID)["PcieAts"] == "Enabled"


def test_reset_hook_gets_the_reset_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    class Popen:
        def __init__(self, argv: list[str], **_: Any) -> None:
            calls.append(argv)

    monkeypatch.setattr("clusterforge.lab.bmc.driver.subprocess.Popen", Popen)
    drv = make(
        tmp_path,
        CLUSTERFORGE_RESET_HOOK=["hook", "plan.json", "n1"],
        CLUSTERFORGE_RESET_HOOK_LOG=str(tmp_path / "hook.log"),
    )
    drv.set_power_state(UUID, "GracefulRestart")
    drv.set_power_state(UUID, "On")  # already on: nothing to do, no hook
    assert calls == [["hook", "plan.json", "n1", "GracefulRestart"]]


def test_reset_bios_stages_the_defaults(tmp_path: Path) -> None:
    drv = make(tmp_path)
    drv.set_bios(UUID, {"PcieAts": "Enabled"})
    drv.set_power_state(UUID, "ForceRestart")
    drv.reset_bios(UUID)
    assert settings_view(drv)["PcieAts"] == "Disabled" and drv.get_bios(UUID)["PcieAts"] == "Enabled"
