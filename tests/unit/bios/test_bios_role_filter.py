"""The bios role's filters (playbooks/roles/bios/filter_plugins/bios.py): what to stage, what is pending."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

import pytest

from clusterforge.spec import bios
from tests.conftest import REPO

FILTER = REPO / "playbooks/roles/bios/filter_plugins/bios.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bios_role_filters", FILTER)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


F = _load()
GENERIC = bios.inventory_map("generic", {"acs_disable": True})
FACTORY = {
    "ProcessorCStates": "Enabled",
    "PowerProfile": "Balanced",
    "SriovEnable": "Disabled",
    "PcieAts": "Disabled",
    "PcieAcs": "Enabled",
    "NumaNodesPerSocket": 1,
}


@pytest.mark.parametrize("mode", ["exact", "prefix"])
@pytest.mark.parametrize(
    ("wanted", "names"),
    [
        ("SysProfile", ["SysProfile", "SysProfile_01"]),
        ("SR_IOVSupport", ["SR_IOVSupport_002B"]),
        ("X", ["X#0a", "X_0B", "Xy"]),
        ("CPUC6Report", ["CPUC6Report#0840", "CPUC6Report#zz"]),
    ],
)
def test_role_and_package_match_names_alike(wanted: str, names: list[str], mode: str) -> None:
    assert F.match_name(wanted, names, mode) == bios.match_name(wanted, names, mode)


@pytest.mark.parametrize(("a", "b"), [(2, "2"), (True, "True"), (True, 1), ("On", "on"), (None, "None")])
def test_role_and_package_compare_values_alike(a: Any, b: Any) -> None:
    assert F.same(a, b) == bios.same(a, b)


def test_fresh_bmc_stages_everything() -> None:
    p = F.bios_plan(FACTORY, dict(FACTORY), GENERIC)
    assert p["unknown"] == [] and p["pending"] == {} and p["reason"] == ""
    assert p["to_set"] == {
        "ProcessorCStates": "Disabled",
        "PowerProfile": "MaximumPerformance",
        "SriovEnable": "Enabled",
        "PcieAts": "Enabled",
        "PcieAcs": "Disabled",
    }


@pytest.mark.parametrize("full_copy", [True, False], ids=["full-settings-copy", "only-staged-values"])
def test_staged_values_are_pending_not_restaged(full_copy: bool) -> None:
    staged = {"PcieAts": "Enabled", "SriovEnable": "Enabled"}
    p = F.bios_plan(FACTORY, {**FACTORY, **staged} if full_copy else staged, GENERIC)
    assert p["pending"] == staged
    assert set(p["to_set"]) == {"ProcessorCStates", "PowerProfile", "PcieAcs"}
    assert p["reason"] == "bios: PcieAts=Enabled, SriovEnable=Enabled"


def test_applied_means_nothing_to_do() -> None:
    current = {**FACTORY, **GENERIC["set"]}
    p = F.bios_plan(current, {}, GENERIC)
    assert p["to_set"] == {} and p["pending"] == {} and p["reason"] == ""


def test_unknown_and_ambiguous_names() -> None:
    p = F.bios_plan(FACTORY, {}, GENERIC, {"Bogus": "On"})
    assert p["unknown"] == ["Bogus"] and "Bogus" not in p["to_set"]
    sm = {"match": "prefix", "set": {"PackageCState": "C0/C1 state"}, "check": {}}
    amb = F.bios_plan({"PackageCState#0843": "C6", "PackageCState_0099": "C6"}, {}, sm)
    assert amb["ambiguous"] == {"PackageCState": ["PackageCState#0843", "PackageCState_0099"]}
    one = F.bios_plan({"PackageCState#0843": "C6"}, {}, sm)
    assert one["to_set"] == {"PackageCState#0843": "C0/C1 state"}


def test_values_staged_by_someone_else_are_reported() -> None:
    p = F.bios_plan({**FACTORY, **GENERIC["set"]}, {"NumaNodesPerSocket": 2}, GENERIC)
    assert p["foreign"] == {"NumaNodesPerSocket": 2}
    assert p["reason"] == "bios: NumaNodesPerSocket=2 (staged outside clusterforge)"


def test_checked_attributes_are_never_written() -> None:
    dell = bios.inventory_map("dell", {"acs_disable": True})
    current = {
        "SysProfile": "PerfPerWattOptimizedDapc",
        "ProcCStates": "Enabled",
        "SriovGlobalEnable": "Enabled",
    }
    p = F.bios_plan(current, {}, dell)
    assert p["to_set"] == {"SysProfile": "PerfOptimized"}
    assert p["wrong_check"] == {"ProcCStates": {"expected": "Disabled", "found": "Enabled"}}


def test_integer_served_as_string_is_not_restaged() -> None:
    p = F.bios_plan({"NumaNodesPerSocket": "2"}, {}, {"match": "exact", "set": {"NumaNodesPerSocket": 2}})
    assert p["to_set"] == {} and p["pending"] == {}


def test_system_uri_selection() -> None:
    one = [[{"system_uri": "/redfish/v1/Systems/1"}, {}]]
    two = [*one, [{"system_uri": "/redfish/v1/Systems/2"}, {}]]
    assert F.bios_system_uri(one) == ["/redfish/v1/Systems/1", ""]
    assert F.bios_system_uri(two)[1].startswith("the BMC has 2 ComputerSystems")
    assert F.bios_system_uri(two, "2") == ["/redfish/v1/Systems/2", ""]
    assert "no ComputerSystem '3'" in F.bios_system_uri(two, "3")[1]
