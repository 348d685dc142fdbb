"""`certification.link_counters` rules: every counter named is one the link-counter policy judges on this
spec's fabrics (per SKU: on that SKU's fabric type), and every SKU named is one of the spec's."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Set

from clusterforge.spec.checks_net import Bad
from clusterforge.spec.counter_policy import FABRIC_TYPES, PRIO, SPEC_PATH, counter_names
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku

PATH = tuple(SPEC_PATH.split("."))


def fabric_type_of(sku: Sku) -> str:
    """The compute fabric type a SKU's NICs go on (spec checks refuse a pool on another)."""
    return "roce" if sku.compute_nics.link_layer == "Ethernet" else "infiniband"


def _templated(name: str, known: list[str]) -> str | None:
    """The per-priority name ``name`` spells with a digit where ``{prio}`` goes."""
    for k in known:
        if PRIO in k and re.fullmatch(re.escape(k).replace(re.escape(PRIO), "[0-7]"), name):
            return k
    return None


def _near(name: str, known: list[str], types: list[str], sku: bool) -> str:
    """The fix for an unknown counter name: the template when a digit stands where {prio} goes, the other
    fabric type when it is one of its counters, else the closest name."""
    template = _templated(name, known)
    if template:
        return f"write the priority as {PRIO}: '{template}' (each rail's lossless priority is filled in)"
    other = [t for t in FABRIC_TYPES if t not in types and name in counter_names(t)]
    if other and sku:
        return f"'{name}' is a counter of {other[0]} rails: set it for a SKU on {other[0]}, or site-wide"
    if other:
        return f"'{name}' is a counter of {other[0]} rails and this spec has no {other[0]} fabric: remove it"
    near = difflib.get_close_matches(name, known, n=1)
    return f"did you mean '{near[0]}'?" if near else "name a counter of the list (docs/spec.md)"


def _names(
    bad: Bad,
    path: tuple[str | int, ...],
    names: Mapping[str, object],
    known: list[str],
    where: str,
    types: list[str],
    sku: bool = False,
) -> None:
    for name in names:
        if name not in known:
            bad(
                (*path, name),
                f"a link counter of {where}: {', '.join(known)}",
                f"unknown counter '{name}'",
                _near(name, known, types, sku),
            )


def counter_checks(c: Cluster, skus: dict[str, Sku], unresolved: Set[str], bad: Bad) -> None:
    lc = c.certification.link_counters
    used: list[str] = sorted({f.type for f in c.fabrics.compute})
    site_known = list(dict.fromkeys(n for t in used for n in counter_names(t)))
    where = f"this spec's fabrics ({', '.join(used)})"
    _names(bad, (*PATH, "limits"), lc.limits, site_known, where, used)
    for skuname, entry in lc.skus.items():
        sku = skus.get(skuname)
        if sku is None:
            if skuname not in unresolved:
                bad(
                    (*PATH, "skus", skuname),
                    f"a SKU of this spec ({', '.join(skus)})",
                    f"unknown SKU '{skuname}'",
                    "use a SKU name listed under skus",
                )
            continue
        ftype = fabric_type_of(sku)
        known = counter_names(ftype, skuname)
        where = f"SKU {skuname} (on {ftype})"
        _names(bad, (*PATH, "skus", skuname, "limits"), entry.limits, known, where, [ftype], sku=True)
