"""Where clusterforge's non-Python parts are: the Ansible playbooks and roles (with the `clusterforge.node`
collection), the validators, the Pulumi program, the alert rules and dashboards, and the third-party
Ansible collections.

They ship inside the package (`clusterforge/_assets/`: in a checkout these are links to the repository's
`playbooks/`, `validators/`, `stacks/` and `monitoring/`; a wheel holds copies), so an installed tool runs
outside a checkout. A site points any of them elsewhere with an environment setting:

| part | setting |
|---|---|
| playbooks | `CLUSTERFORGE_PLAYBOOKS` |
| validators | `CLUSTERFORGE_VALIDATORS` |
| Pulumi program | `CLUSTERFORGE_STACKS` |
| alert rules, Grafana dashboards | `CLUSTERFORGE_MONITORING` |
| Ansible collections (ansible.posix, community.general) | `CLUSTERFORGE_COLLECTIONS_DIR` |
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from clusterforge.errors import ClusterforgeError

_PACKAGE_ASSETS = Path(str(resources.files("clusterforge"))) / "_assets"
#: the checkout this module runs from, if any (src/clusterforge/assets.py -> the repository root)
_CHECKOUT = Path(__file__).resolve().parents[2]


def _asset(name: str, setting: str, marker: str) -> Path:
    override = os.environ.get(setting)
    path = Path(override) if override else _PACKAGE_ASSETS / name
    if not (path / marker).exists():
        where = f"{setting}={override}" if override else f"the installed package ({path})"
        raise ClusterforgeError(
            f"clusterforge's {name} are missing: {where} has no {marker}; reinstall clusterforge or "
            f"point {setting} at a folder that has it"
        )
    return path.resolve()


def playbooks() -> Path:
    """The folder holding site.yml, ansible.cfg, roles/ and collections/ (clusterforge.node)."""
    return _asset("playbooks", "CLUSTERFORGE_PLAYBOOKS", "site.yml")


def validators() -> Path:
    """The pytest-testinfra validators (conftest.py and test_*.py)."""
    return _asset("validators", "CLUSTERFORGE_VALIDATORS", "conftest.py")


def stacks() -> Path:
    """The Pulumi projects (stacks/cluster)."""
    return _asset("stacks", "CLUSTERFORGE_STACKS", "cluster/Pulumi.yaml")


def monitoring() -> Path:
    """The Prometheus alert rules (alerts/clusterforge.rules.yml) and Grafana dashboards (grafana/)."""
    return _asset("monitoring", "CLUSTERFORGE_MONITORING", "alerts/clusterforge.rules.yml")


def collections_dir() -> Path:
    """Where ansible.posix and community.general are installed (`clusterforge collections install`).

    Order: `CLUSTERFORGE_COLLECTIONS_DIR`; the checkout's `collections/` (what `make collections` fills);
    else the user's data folder (`$XDG_DATA_HOME/clusterforge/collections`).
    """
    override = os.environ.get("CLUSTERFORGE_COLLECTIONS_DIR")
    if override:
        return Path(override)
    checkout = _CHECKOUT / "collections"
    if (_CHECKOUT / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data / "clusterforge" / "collections"
