# Copyright: clusterforge contributors
# Apache-2.0
"""Filters of the bios role: what to stage on a BMC, what is pending, what is wrong.

Self-contained (stdlib only): the role must not need clusterforge importable on the controller. The name
matching and value comparison follow clusterforge.spec.bios (tests/unit/bios checks that both agree).
"""

from __future__ import annotations

import re

_SUFFIX = re.compile(r"^[#_][0-9A-Fa-f]{2,8}$")


def same(want, have):
    """Redfish values compare by value; an integer served as a string ("2") is the same setting."""
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have or str(want).lower() == str(have).lower()
    return want == have or str(want) == str(have)


def match_name(wanted, available, mode):
    """The BMC's names for `wanted`: [] unknown, [x] found, several = ambiguous (mode exact|prefix)."""
    names = list(available)
    if wanted in names:
        return [wanted]
    if mode != "prefix":
        return []
    return sorted(n for n in names if n.startswith(wanted) and _SUFFIX.match(n[len(wanted):]))


def _fmt(attrs):
    return ", ".join(f"{k}={attrs[k]}" for k in sorted(attrs))


def bios_plan(current, staged, vendor_map, extra=None):
    """Compare the BMC's current and staged BIOS attributes with the vendor map (+ extra attributes).

    current: Attributes of the Bios resource; staged: Attributes of its settings resource (a full copy
    with the staged values over it on some BMCs, only the staged values on others, {} when absent);
    vendor_map: {match, set: {name: value}, check: {name: value}} as the plan renders it.
    Returns unknown (names the BMC does not offer), ambiguous, the resolved names, to_set (what a PATCH
    must stage), pending (wanted values staged but not yet current), foreign (values staged by someone
    else that the next reset applies too), wrong_check (checked-only attributes that differ), reason.
    """
    current = dict(current or {})
    staged = dict(staged or {})
    vendor_map = dict(vendor_map or {})
    mode = vendor_map.get("match", "exact")
    want_set = dict(vendor_map.get("set") or {})
    want_set.update(extra or {})
    want_check = dict(vendor_map.get("check") or {})
    unknown, ambiguous, resolved, checked = [], {}, {}, {}
    for wanted, target in ((want_set, resolved), (want_check, checked)):
        for name, value in wanted.items():
            hits = match_name(name, current, mode)
            if not hits:
                unknown.append(name)
            elif len(hits) > 1:
                ambiguous[name] = hits
            else:
                target[hits[0]] = value
    differs = {n: v for n, v in resolved.items() if not same(v, current[n])}
    to_set = {n: v for n, v in differs.items() if not (n in staged and same(v, staged[n]))}
    pending = {n: v for n, v in differs.items() if n not in to_set}
    foreign = {n: v for n, v in staged.items()
               if n not in resolved and n in current and not same(v, current[n])}
    wrong_check = {n: {"expected": v, "found": current[n]} for n, v in checked.items()
                   if not same(v, current[n])}
    reason = ""
    if pending:
        reason = "bios: " + _fmt(pending)
        if foreign:
            reason += f" (also staged outside clusterforge: {_fmt(foreign)})"
    elif foreign:
        reason = f"bios: {_fmt(foreign)} (staged outside clusterforge)"
    return {
        "unknown": sorted(unknown),
        "ambiguous": ambiguous,
        "resolved": resolved,
        "checked": checked,
        "to_set": to_set,
        "pending": pending,
        "foreign": foreign,
        "wrong_check": wrong_check,
        "reason": reason,
    }


def bios_system_uri(entries, system_id=""):
    """The ComputerSystem to work on from redfish_info's bios_attribute entries: the one named
    `system_id`, else the only one. Returns (uri, error)."""
    uris = [e[0].get("system_uri", "") for e in entries or [] if e and isinstance(e[0], dict)]
    if system_id:
        hits = [u for u in uris if u.rstrip("/").rsplit("/", 1)[-1] == system_id]
        if len(hits) != 1:
            have = ", ".join(uris) or "none"
            return ["", f"no ComputerSystem {system_id!r} on this BMC (it has: {have})"]
        return [hits[0], ""]
    if len(uris) != 1:
        return ["", f"the BMC has {len(uris)} ComputerSystems ({', '.join(uris)}): set bios_system_id"]
    return [uris[0], ""]


class FilterModule:
    def filters(self):
        return {"bios_plan": bios_plan, "bios_system_uri": bios_system_uri}
