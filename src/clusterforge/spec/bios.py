"""BIOS attribute maps per BMC vendor (data in `catalog/bios/<vendor>.yaml`) and what a node must show.

A map names, for each setting clusterforge cares about (performance profile, C-states off, SR-IOV on, ATS
on, ACS per the tuning policy), the vendor's Redfish BIOS attribute(s) and value(s) with a source. This
module validates the maps, resolves one against the plan's tuning, and matches the names against what a
BMC offers (Supermicro names carry a board-specific hex suffix). The `bios` role carries its own copy of
the matching rules (playbooks/roles/bios/filter_plugins/bios.py); tests/unit/bios checks both agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

Vendor = Literal["dell", "hpe", "supermicro", "generic"]
VENDORS: tuple[str, ...] = ("dell", "hpe", "supermicro", "generic")
SETTINGS: tuple[str, ...] = ("performance_profile", "cstates_off", "sriov_on", "ats_on", "acs")
Scalar = str | int | bool
_SUFFIX = re.compile(r"^[#_][0-9A-Fa-f]{2,8}$")


class _Strict(BaseModel):
    # strict like the spec (docs/security.md): the maps are shipped data, but their values are written to BMCs
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class AcsPolicy(_Strict):
    disable: dict[str, Scalar] = Field(default_factory=dict)
    enable: dict[str, Scalar] = Field(default_factory=dict)


class Setting(_Strict):
    attributes: dict[str, Scalar] = Field(default_factory=dict)
    by_acs_policy: AcsPolicy | None = None
    governed_by: str | None = Field(default=None, description="set by this attribute: check, never write")
    evidence: Literal["verified", "secondary", "derived", "lab", "none"]
    source: str = ""
    note: str = ""

    @model_validator(mode="after")
    def _sourced(self) -> Setting:
        pol = self.by_acs_policy
        names = self.attributes or (pol and (pol.disable or pol.enable))
        if names and (self.evidence == "none" or not self.source.strip()):
            raise ValueError("an attribute needs a source and an evidence marker other than 'none'")
        if not names and not self.note.strip():
            raise ValueError("a setting without attributes must say why (note)")
        if self.attributes and self.by_acs_policy:
            raise ValueError("use either attributes or by_acs_policy")
        return self


class VendorMap(_Strict):
    vendor: Vendor
    match: Literal["exact", "prefix"]
    description: str = ""
    settings: dict[str, Setting]

    @model_validator(mode="after")
    def _complete(self) -> VendorMap:
        if set(self.settings) != set(SETTINGS):
            missing, extra = set(SETTINGS) - set(self.settings), set(self.settings) - set(SETTINGS)
            raise ValueError(
                f"settings must be exactly {list(SETTINGS)} (missing {sorted(missing)}, "
                f"unknown {sorted(extra)})"
            )
        return self


@dataclass(frozen=True)
class Expected:
    """One attribute a node's BMC must show: `apply` False means checked only (governed by another)."""

    setting: str
    name: str
    value: Scalar
    apply: bool
    governed_by: str | None
    source: str


@cache
def maps() -> dict[str, VendorMap]:
    """Every vendor map shipped with clusterforge, by vendor."""
    root = resources.files("clusterforge.spec") / "catalog" / "bios"
    out: dict[str, VendorMap] = {}
    for f in sorted(root.iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".yaml"):
            continue
        try:
            m = VendorMap.model_validate(yaml.safe_load(f.read_text(encoding="utf-8")))
        except Exception as exc:  # a broken catalog is a bug in clusterforge, not user input
            raise RuntimeError(f"BIOS map {f.name} is invalid: {exc}") from exc
        if m.vendor != f.name[: -len(".yaml")]:
            raise RuntimeError(f"BIOS map {f.name} declares vendor {m.vendor!r}")
        out[m.vendor] = m
    if set(out) != set(VENDORS):
        raise RuntimeError(f"BIOS maps missing for {sorted(set(VENDORS) - set(out))}")
    return out


def resolve(vendor: str, tuning: dict[str, Any]) -> list[Expected]:
    """The attributes a node with this BMC vendor must show under the plan's tuning policy."""
    m = maps().get(vendor)
    if m is None:
        raise KeyError(f"no BIOS map for vendor {vendor!r} (have {', '.join(VENDORS)})")
    out: list[Expected] = []
    for sid in SETTINGS:
        s = m.settings[sid]
        attrs = s.attributes
        if s.by_acs_policy is not None:
            attrs = s.by_acs_policy.disable if tuning.get("acs_disable", True) else s.by_acs_policy.enable
        for name, value in attrs.items():
            out.append(Expected(sid, name, value, s.governed_by is None, s.governed_by, s.source))
    return out


def inventory_map(vendor: str, tuning: dict[str, Any]) -> dict[str, Any]:
    """The role's view of one vendor map: what to write, what to check only, how names match."""
    exp = resolve(vendor, tuning)
    return {
        "match": maps()[vendor].match,
        "set": {e.name: e.value for e in exp if e.apply},
        "check": {e.name: e.value for e in exp if not e.apply},
        "settings": {e.name: e.setting for e in exp},
    }


def same(want: Any, have: Any) -> bool:
    """Redfish values compare by value; an integer served as a string ("2") is the same setting."""
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have or str(want).lower() == str(have).lower()
    return bool(want == have or str(want) == str(have))


def match_name(wanted: str, available: list[str] | set[str] | dict[str, Any], mode: str) -> list[str]:
    """The BMC's attribute names that stand for `wanted`: [] unknown, [x] found, several = ambiguous."""
    names = list(available)
    if wanted in names:
        return [wanted]
    if mode != "prefix":
        return []
    return sorted(n for n in names if n.startswith(wanted) and _SUFFIX.match(n[len(wanted) :]))


@dataclass(frozen=True)
class Finding:
    name: str  # the BMC's name when found, else the map's
    expected: Scalar
    found: Any  # None when the BMC does not offer the attribute
    problem: Literal["mismatch", "unknown", "ambiguous"]
    detail: str = ""

    def __str__(self) -> str:
        if self.problem == "unknown":
            return f"{self.name}: expected {self.expected!r}, found no such attribute on the BMC"
        if self.problem == "ambiguous":
            return f"{self.name}: expected {self.expected!r}, found several candidates ({self.detail})"
        gov = f" (governed by {self.detail})" if self.detail else ""
        return f"{self.name}: expected {self.expected!r}, found {self.found!r}{gov}"


def compare(
    expected: list[Expected], attributes: dict[str, Any], mode: str, extra: dict[str, Scalar] | None = None
) -> list[Finding]:
    """Every expected attribute that the BMC's current `attributes` do not show, in map order."""
    wanted = [(e.name, e.value, e.governed_by or "") for e in expected]
    wanted += [(k, v, "") for k, v in (extra or {}).items()]
    out: list[Finding] = []
    for name, value, gov in wanted:
        hits = match_name(name, attributes, mode)
        if not hits:
            out.append(Finding(name, value, None, "unknown"))
        elif len(hits) > 1:
            out.append(Finding(name, value, None, "ambiguous", ", ".join(hits)))
        elif not same(value, attributes[hits[0]]):
            out.append(Finding(hits[0], value, attributes[hits[0]], "mismatch", gov))
    return out
