"""How two reads of a node's managed state differ (pure): the one comparison of `node_state` documents.

`want` is a recorded read (right after the node's last successful provision, or right before a reboot) and
`got` a later read of the same names; `managed` (`clusterforge.run.managed.Managed.to_dict()`) says which
units a task started and which it enabled. The fast drift (`clusterforge.drift.applied`) and the check after
a provision's reboot (`clusterforge.run.provision`) both ask it, with their own words for the recorded side
(`recorded`: "as provisioned", "before the reboot").

Rules: a file must read the same (content digest, mode, owner, group), or stay absent; a package installed
then must be installed at the same version, and stay held if it was (a hold that cannot be read is not a
difference); a module loaded then must be loaded; a unit a task started or stopped must be in the same
running state, one a task enabled or disabled in the same boot-time state (a record without that split:
both); any other managed unit may have run since (a boot-time oneshot) but must not have failed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Difference:
    """One setting that reads otherwise than recorded: `what` names it (``file /etc/x mode``, ``package p``,
    ``service u state``, ``kernel module m``), `expected` is the recorded value, `found` the later one."""

    what: str
    expected: str
    found: str


def _short(digest: str) -> str:
    return f"sha256 {digest[:12]}"


def _files(want: Mapping[str, Any], got: Mapping[str, Any], recorded: str) -> Iterator[Difference]:
    for path, w in sorted(want.items()):
        g = got.get(path)
        if w is None and g is None:
            continue
        if w is None:
            yield Difference(f"file {path}", f"absent ({recorded})", "present")
        elif g is None:
            yield Difference(f"file {path}", _short(w["sha256"]), "missing")
        else:
            if g.get("sha256") != w.get("sha256"):
                yield Difference(
                    f"file {path}",
                    f"content {recorded} ({_short(w['sha256'])})",
                    f"changed ({_short(str(g.get('sha256', '')))})",
                )
            for attr in ("mode", "owner", "group"):
                if g.get(attr) != w.get(attr):
                    yield Difference(f"file {path} {attr}", str(w.get(attr)), str(g.get(attr)))


def _packages(want: Mapping[str, Any], got: Mapping[str, Any]) -> Iterator[Difference]:
    for name, w in sorted(want.items()):
        g = got.get(name)
        if w is None:
            continue  # not installed then: nothing a task asked for
        if g is None:
            yield Difference(f"package {name}", str(w["version"]), "not installed")
            continue
        if g.get("version") != w.get("version"):
            yield Difference(f"package {name}", str(w["version"]), str(g.get("version")))
        if w.get("hold") and g.get("hold") is False:
            yield Difference(f"package {name} hold", "held", "not held")


def _services(
    want: Mapping[str, Any], got: Mapping[str, Any], managed: Mapping[str, Any]
) -> Iterator[Difference]:
    split = "services_active" in managed or "services_enabled" in managed
    active = set(managed.get("services_active") or ())
    enabled = set(managed.get("services_enabled") or ())
    for unit, w in sorted(want.items()):
        g = got.get(unit) or {}
        for attr, what, tasked in (("active", "state", active), ("enabled", "enabled", enabled)):
            if (not split or unit in tasked) and g.get(attr) != w.get(attr):
                yield Difference(f"service {unit} {what}", str(w.get(attr)), str(g.get(attr, "unknown")))
            elif attr == "active" and g.get(attr) == "failed" and w.get(attr) != "failed":
                yield Difference(f"service {unit} state", "not failed", "failed")  # ran since, and failed


def differences(
    want: Mapping[str, Any], got: Mapping[str, Any], managed: Mapping[str, Any], recorded: str
) -> list[Difference]:
    """Every difference of `got` from `want` (both `node_state` documents), in a stable order: files,
    packages, services, modules."""
    out = [
        *_files(want.get("files") or {}, got.get("files") or {}, recorded),
        *_packages(want.get("packages") or {}, got.get("packages") or {}),
        *_services(want.get("services") or {}, got.get("services") or {}, managed),
    ]
    now = got.get("modules") or {}
    out += [
        Difference(f"kernel module {m}", "loaded", "not loaded")
        for m, loaded in sorted((want.get("modules") or {}).items())
        if loaded and not now.get(m)
    ]
    return out
