"""Lab-wide constants and paths (see docs/contracts.md, section "Lab")."""

from __future__ import annotations

import os
from pathlib import Path

STATE_BASE = Path(os.environ.get("CLUSTERFORGE_LAB_STATE", "/var/lib/clusterforge/lab"))
IMAGE_CACHE = Path(os.environ.get("CLUSTERFORGE_IMAGE_CACHE", "~/.cache/clusterforge/images")).expanduser()

MGMT_BRIDGE = "cfbr0"
MGMT_NETWORK = "10.244.0.0/24"
HOST_IP = "10.244.0.1"
REPO_PORT = 8780
PROXY_PORT = 3142  # the Debian caching proxy (apt-cacher-ng)
SLURMCTLD_PORT = 6817
NETNS_PREFIX = "cf-"
LINK_PREFIX = "cf"  # host-side veth ends and rail bridges
RAIL_MTU = 9000

NSPAWN_ENV = {"SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network"}  # never "yes"
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def state_root(cluster: str) -> Path:
    return STATE_BASE / cluster
