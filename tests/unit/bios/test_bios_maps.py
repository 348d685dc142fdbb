"""The vendor BIOS maps (catalog/bios/*.yaml): complete, sourced, resolved against the tuning policy."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from clusterforge.plan import bios_vars
from clusterforge.spec import bios


def test_every_vendor_has_a_complete_sourced_map() -> None:
    maps = bios.maps()
    assert sorted(maps) == sorted(bios.VENDORS)
    for vendor, m in maps.items():
        assert set(m.settings) == set(bios.SETTINGS), vendor
        for sid, s in m.settings.items():
            if s.attributes or s.by_acs_policy:
                assert s.source.strip() and s.evidence != "none", (vendor, sid)
            else:
                assert s.note.strip(), (vendor, sid)


def test_a_map_without_sources_is_rejected() -> None:
    doc = yaml.safe_load(
        (resources.files("clusterforge.spec") / "catalog" / "bios" / "dell.yaml").read_text()
    )
    doc["settings"]["sriov_on"]["source"] = ""
    with pytest.raises(ValidationError, match="source"):
        bios.VendorMap.model_validate(doc)
    del doc["settings"]["sriov_on"]
    with pytest.raises(ValidationError, match="missing"):
        bios.VendorMap.model_validate(doc)


def test_the_core_settings_are_mapped_for_real_vendors() -> None:
    for vendor in ("dell", "hpe", "supermicro"):
        ids = {e.setting for e in bios.resolve(vendor, {"acs_disable": True})}
        assert {"performance_profile", "cstates_off", "sriov_on"} <= ids, vendor


def test_acs_follows_the_tuning_policy() -> None:
    off = {e.name: e.value for e in bios.resolve("generic", {"acs_disable": True})}
    on = {e.name: e.value for e in bios.resolve("generic", {"acs_disable": False})}
    assert off["PcieAcs"] == "Disabled" and on["PcieAcs"] == "Enabled"
    assert {k: v for k, v in off.items() if k != "PcieAcs"} == {k: v for k, v in on.items() if k != "PcieAcs"}


def test_dell_cstates_are_checked_not_written() -> None:
    m = bios.inventory_map("dell", {"acs_disable": True})
    assert m["check"] == {"ProcCStates": "Disabled"}
    assert "ProcCStates" not in m["set"] and m["set"]["SysProfile"] == "PerfOptimized"
    assert m["match"] == "exact" and bios.inventory_map("supermicro", {})["match"] == "prefix"


def test_unknown_vendor_is_an_error() -> None:
    with pytest.raises(KeyError, match="lenovo"):
        bios.resolve("lenovo", {})


@pytest.mark.parametrize(
    ("wanted", "names", "mode", "hits"),
    [
        ("SysProfile", ["SysProfile", "SysProfileX"], "exact", ["SysProfile"]),
        ("SysProfile", ["SysProfile_00AB"], "exact", []),
        ("SR_IOVSupport", ["SR_IOVSupport_002B", "SR_IOVSupportX"], "prefix", ["SR_IOVSupport_002B"]),
        ("CPUC6Report", ["CPUC6Report#0840"], "prefix", ["CPUC6Report#0840"]),
        (
            "PackageCState",
            ["PackageCState#0843", "PackageCState_0099"],
            "prefix",
            ["PackageCState#0843", "PackageCState_0099"],
        ),
        ("CPUC6", ["CPUC6Report#0840"], "prefix", []),
    ],
)
def test_match_name(wanted: str, names: list[str], mode: str, hits: list[str]) -> None:
    assert bios.match_name(wanted, names, mode) == hits


def test_compare_names_attribute_expected_and_found() -> None:
    exp = bios.resolve("dell", {"acs_disable": True})
    current = {
        "SysProfile": "PerfPerWattOptimizedDapc",
        "ProcCStates": "Enabled",
        "SriovGlobalEnable": "Enabled",
    }
    found = {f.name: f for f in bios.compare(exp, current, "exact", {"Bogus": "On"})}
    assert set(found) == {"SysProfile", "ProcCStates", "Bogus"}
    assert str(found["SysProfile"]) == (
        "SysProfile: expected 'PerfOptimized', found 'PerfPerWattOptimizedDapc'"
    )
    assert "governed by SysProfile" in str(found["ProcCStates"])
    assert found["Bogus"].problem == "unknown"
    ok = {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "SriovGlobalEnable": "Enabled"}
    assert bios.compare(exp, ok, "exact") == []


def test_same_compares_values_not_encodings() -> None:
    assert bios.same(2, "2") and bios.same(True, "true") and not bios.same(True, 1)
    assert not bios.same("Enabled", "Disabled")


def test_bios_vars_renders_the_maps_and_the_targets_ca(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge import targets
    from clusterforge.lab import config
    from clusterforge.lab.target import LabTarget

    doc = {
        "cluster": "lab",
        "target": "lab",
        "tuning": {"acs_disable": True},
        "nodes": [{"name": "a", "bmc": {"address": "127.0.0.1:8441", "vendor": "generic"}}, {"name": "b"}],
    }
    out = bios_vars.all_vars(doc, targets.for_plan(doc).inventory_overrides(doc).bios_ca_path)
    assert list(out["bios_vendor_maps"]) == ["generic"]
    assert out["bios_vendor_maps"]["generic"]["set"]["PcieAcs"] == "Disabled"
    assert out["bios_ca_path"] == f"{config.STATE_BASE}/lab/bmc/ca.pem"  # the lab's own state root
    elsewhere = LabTarget(lambda *a: None, Path("/srv/cf-lab"))  # a lab kept elsewhere: its CA is there
    assert elsewhere.inventory_overrides(doc).bios_ca_path == "/srv/cf-lab/lab/bmc/ca.pem"
    bare = {**doc, "target": "baremetal", "nodes": [{"name": "a"}]}
    bm = bios_vars.all_vars(bare, targets.for_plan(bare).inventory_overrides(bare).bios_ca_path)
    assert sorted(bm["bios_vendor_maps"]) == sorted(bios.VENDORS) and "bios_ca_path" not in bm
