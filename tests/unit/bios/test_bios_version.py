"""`software.bios` certified against the BMC's Redfish `BiosVersion` (validators/test_software.py::test_bios,
quick tier, run from the controller). The lab BMC reports the lab spec's pin. The end-to-end tests run real
sushy-emulator BMCs (clusterforge.lab.bmc, no hooks) on free ports under a temp state root, as
tests/unit/lab/test_lab_bmcs.py does: pass on the pin, fail on another pin, error on a wrong password, a
BMC that does not answer, or a node without a BMC; the password never appears in a message."""

from __future__ import annotations

import copy
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.certify.redfish import Redfish, check_bios_version
from clusterforge.checks.catalog import VALIDATORS
from clusterforge.lab import bmc
from clusterforge.lab.bmc.driver import BiosFakeDriver
from clusterforge.plan import build_plan
from clusterforge.plan.expect import NodeExpect, node_expect
from clusterforge.spec import load_spec, load_spec_text

REPO = Path(__file__).resolve().parents[3]
LAB_SPEC = REPO / "inventory" / "clusters" / "lab.yaml"
VALIDATOR = REPO / "validators" / "test_software.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_lab_spec_pins_the_bios_and_the_lab_bmcs_carry_it() -> None:
    doc = build_plan(load_spec(LAB_SPEC)).doc
    pin = doc["software"]["bios"]
    assert pin and {b.bios_version for b in bmc.plan_bmcs(doc)} == {pin}


def test_driver_reports_the_configured_bios_version(tmp_path: Path) -> None:
    system = {"uuid": "u1", "name": "n1", "power_state": "On", "nics": []}

    def drv(**extra: Any) -> BiosFakeDriver:
        config = {"SUSHY_EMULATOR_STATE_DIR": str(tmp_path / "s"), "SUSHY_EMULATOR_FAKE_SYSTEMS": [system]}
        return BiosFakeDriver.initialize(config | extra, logging.getLogger("t"))()

    assert drv(CLUSTERFORGE_BIOS_VERSION="2.1.0").get_versions("u1") == {"BiosVersion": "2.1.0"}
    assert drv().get_versions("u1") == {}


def test_check_is_registered_in_the_quick_tier() -> None:
    check = next(c for c in VALIDATORS if c.id == "software.bios")
    assert "quick" in check.tiers
    assert "def test_bios(" in VALIDATOR.read_text()  # module test_software + test_bios = software.bios


@pytest.fixture(scope="module")
def lab_bmcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], Path]]:
    spec = yaml.safe_load(LAB_SPEC.read_text())
    spec["metadata"]["name"] = "unit-biosver"  # not the lab's names, ports or state: a lab may be running
    spec["pools"] = spec["pools"][:1]
    spec["pools"][0]["count"] = 1
    spec["pools"][0]["nodes"] = [{"name": "roce-01", "bmc": {"address": f"127.0.0.1:{_free_port()}"}}]
    doc = build_plan(load_spec_text(yaml.safe_dump(spec), "unit-biosver.yaml")).doc
    root = tmp_path_factory.mktemp("biosver")
    bmc.start_bmcs(doc, root, hooks=False)
    try:
        yield doc, root
    finally:
        bmc.stop_bmcs(root)


@pytest.fixture
def account(lab_bmcs: tuple[dict[str, Any], Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    _doc, root = lab_bmcs
    for k in (*bmc.ACCOUNT_VARS, "CLUSTERFORGE_BMC_CA"):
        monkeypatch.delenv(k, raising=False)
    env = bmc.bmc_env(root)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLUSTERFORGE_BMC_CA", str(root / "bmc" / "ca.pem"))
    return env


def _node(doc: dict[str, Any], **pins: Any) -> NodeExpect:
    """The first node with other pins in its desired state (where the check reads them)."""
    d = copy.deepcopy(doc)
    d["nodes"][0]["desired"]["software"].update(pins)
    return node_expect(d, d["nodes"][0])


def test_pinned_version_passes_and_another_fails(
    lab_bmcs: tuple[dict[str, Any], Path], account: dict[str, str]
) -> None:
    doc, _root = lab_bmcs
    assert check_bios_version(_node(doc)) == doc["software"]["bios"] == "2.1.0"
    with pytest.raises(CheckFailed) as err:
        check_bios_version(_node(doc, bios="2.3.0"))
    assert err.value.expected == "2.3.0" and err.value.found == "2.1.0"
    assert "update the system BIOS" in err.value.fix


def test_wrong_password_unreachable_bmc_and_no_bmc_are_errors(
    lab_bmcs: tuple[dict[str, Any], Path], account: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, _root = lab_bmcs
    monkeypatch.delenv("CLUSTERFORGE_BMC_PASSWORD_FILE")
    monkeypatch.setenv("CLUSTERFORGE_BMC_PASSWORD", "not-the-password-s3cr3t")
    with pytest.raises(CheckError, match="HTTP 401") as err:
        check_bios_version(_node(doc))
    assert "s3cr3t" not in str(err.value)
    gone = copy.deepcopy(doc)
    gone["nodes"][0]["bmc"]["address"] = f"127.0.0.1:{_free_port()}"
    with pytest.raises(CheckError, match="cannot GET /redfish/v1/"):
        check_bios_version(node_expect(gone, gone["nodes"][0]))
    none = copy.deepcopy(doc)
    none["nodes"][0]["bmc"] = None
    with pytest.raises(CheckError, match="has no BMC in the spec"):
        check_bios_version(node_expect(none, none["nodes"][0]))
    monkeypatch.delenv("CLUSTERFORGE_BMC_USER")
    with pytest.raises(CheckError, match="no BMC account"):
        check_bios_version(_node(doc))


def test_client_never_shows_the_password() -> None:
    rf = Redfish("127.0.0.1:1", "u", "hunter2-secret", None, 1.0)
    assert "hunter2" not in repr(rf) and "hunter2" not in str(vars(rf).get("base"))
