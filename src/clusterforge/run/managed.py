"""What a provision manages on a node, named by the provision's own task results: the files it writes,
the packages it installs or holds, the services it starts or enables, the kernel modules it loads.

The list is read from the Ansible events of the site.yml runs (no second list to keep in step with the
roles): a role that templates a new file is covered the day it is written. `clusterforge.run.provision`
reads these on the node right after a successful provision (`clusterforge.remote.node_state`) and keeps
them as the node's applied state; the fast drift reads them again and compares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterforge.remote.state_diff import differences

#: modules whose result names a file they wrote (`dest`, or `path` for the line/ini editors)
FILE_ACTIONS = frozenset(
    {"template", "copy", "lineinfile", "blockinfile", "ini_file", "get_url", "deb822_repository"}
)
PACKAGE_ACTIONS = frozenset({"apt", "dnf", "yum", "package", "dpkg_selections"})
SERVICE_ACTIONS = frozenset({"systemd_service", "systemd", "service"})
MODULE_ACTIONS = frozenset({"modprobe"})
KINDS = ("files", "packages", "services", "modules", "services_active", "services_enabled")

# a version pin on a package name: apt `name=1.2*`, `name>=1`, dnf `name-1.2.3` is left alone (no
# separator tells the name from the version there: the unpinned name is what `package` installs)
_APT_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9+.:_-]*?)(?:[=<>].*)?$")


def short_action(action: str) -> str:
    """`ansible.builtin.template` -> `template`; `community.general.modprobe` -> `modprobe`."""
    return action.rsplit(".", 1)[-1]


@dataclass
class Managed:
    """Names only (what to read), never values: the node's own state is what is recorded."""

    files: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    services: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    #: of `services`, those whose running state a task sets (state: started/stopped/restarted), and those
    #: whose boot-time enablement it sets: only these attributes are compared (a unit only enabled is
    #: started at the next boot, not by the provision)
    services_active: set[str] = field(default_factory=set)
    services_enabled: set[str] = field(default_factory=set)

    def add(self, other: Managed) -> None:
        for k in KINDS:
            getattr(self, k).update(getattr(other, k))

    def to_dict(self) -> dict[str, list[str]]:
        return {k: sorted(getattr(self, k)) for k in KINDS}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Managed:
        return cls(**{k: set(map(str, doc.get(k) or ())) for k in KINDS})

    def __bool__(self) -> bool:
        return bool(self.files or self.packages or self.services or self.modules)


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Iterable):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def package_name(spec: str) -> str | None:
    """The package of an install spec (`libnccl2=2.26.2-1+cuda12.8` -> `libnccl2`); None for what is not
    a package name (a path to a .deb/.rpm, a URL, `*`, a group `@x`)."""
    if "/" in spec or spec.startswith(("@", "*")) or spec.endswith((".deb", ".rpm")):
        return None
    m = _APT_PIN.match(spec)
    return m.group(1) if m else None


def _one(action: str, res: Mapping[str, Any]) -> Managed:
    out = Managed()
    if res.get("skipped") or res.get("failed"):
        return out
    args = (res.get("invocation") or {}).get("module_args") or {}
    if action in FILE_ACTIONS:
        path = res.get("dest") or res.get("path") or args.get("dest") or args.get("path")
        if isinstance(path, str) and path.startswith("/"):
            out.files.add(path)
    elif action in PACKAGE_ACTIONS:
        if action == "dpkg_selections" or args.get("state", "present") in ("present", "latest", "installed"):
            out.packages |= {p for p in map(package_name, _names(args.get("name"))) if p}
    elif action in SERVICE_ACTIONS:
        name = args.get("name")
        unit = f"{name}" if isinstance(name, str) and "." in name else f"{name}.service"
        if isinstance(name, str) and name and args.get("state"):
            out.services_active.add(unit)
        if isinstance(name, str) and name and args.get("enabled") is not None:
            out.services_enabled.add(unit)
        out.services |= out.services_active | out.services_enabled
    elif action in MODULE_ACTIONS:
        name = args.get("name")
        if isinstance(name, str) and name and args.get("state", "present") == "present":
            out.modules.add(name)
    return out


def from_result(action: str, res: Mapping[str, Any]) -> Managed:
    """What one task result (`runner_on_ok` `res`; a loop's items under `results`) says is managed."""
    short = short_action(action)
    out = Managed()
    items = res.get("results")
    for r in items if isinstance(items, list) else [res]:
        if isinstance(r, Mapping):
            out.add(_one(short, r))
    return out


def applied_state(
    plan_doc: Mapping[str, Any], node: str, managed: Managed, state: Mapping[str, Any], inputs: str = ""
) -> dict[str, Any]:
    """A node's applied state as a provision run keeps it: what is managed, its state as read right after
    the node converged, and what it converged to (the plan, the node's desired state and its digest, the
    clusterforge version whose roles applied it, and `inputs`: the digest of those roles and the inventory,
    `clusterforge.run.inputs`)."""
    from clusterforge import __version__
    from clusterforge.plan.digest import sha256_of

    entry: Mapping[str, Any] = next((n for n in plan_doc["nodes"] if n["name"] == node), {})
    desired = entry.get("desired") or {}
    return {
        "plan_hash": plan_doc.get("plan_hash", ""),
        "desired_sha256": sha256_of(desired),
        "desired": desired,
        "version": __version__,
        "inputs_sha256": inputs,
        "managed": managed.to_dict(),
        "state": {k: state.get(k, {}) for k in ("files", "packages", "services", "modules")},
    }


def reboot_differences(managed: Managed, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What did not survive a reboot: `before` and `after` are reads of the same names (`managed`) right
    before and after it, compared by the fast drift's rules (`clusterforge.remote.state_diff`): files and
    packages read the same, modules loaded again, units a task started running again and units a task
    enabled still enabled; any other managed unit (enabled only: a boot-time oneshot) may have run at boot,
    but must not have failed."""
    return [
        f"{d.what}: expected {d.expected}, found {d.found}"
        for d in differences(before, after, managed.to_dict(), "before the reboot")
    ]
