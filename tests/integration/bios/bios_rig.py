"""Helpers of tests/integration/bios: a real Redfish service on localhost for the bios role and
validator: sushy-emulator with the lab BMC
driver (TLS from its own CA, basic auth), one per node that the plan gives a BMC. No lab is needed: the
role's node-side task (the pending-reboot record) runs with a local connection into a temp file.

The plan is the lab spec with `bmc` entries for roce-01/roce-02 on free ports (ib-01/02 have none: the
play skips them), built and rendered by the real planner; the bios vars are merged into
group_vars/all.yml as `clusterforge.plan.bios_vars` renders them.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from clusterforge.run.ansible import PlaybookResult, run_playbook

BMC_NODES = ("roce-01", "roce-02")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Rig:
    tmp: Path
    inventory: Path
    plan: dict[str, Any]
    urls: dict[str, str]
    ca: Path
    creds: dict[str, str]  # {user, password} of the BMCs' account (credentials.json)

    @property
    def auth(self) -> tuple[str, str]:
        return self.creds["user"], self.creds["password"]

    def pending_file(self, node: str) -> Path:
        return self.tmp / "nodes" / f"{node}.reboot-required"

    def record(self, node: str) -> str:
        """The node's pending-reboot record ('' when absent: the module removes it with no reason left)."""
        f = self.pending_file(node)
        return f.read_text() if f.exists() else ""

    def run(self, check: bool = False, keep: Path | None = None, **extravars: Any) -> PlaybookResult:
        base = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "bios_ca_path": str(self.ca),
            "bios_pending_file": str(self.tmp / "nodes" / "{{ inventory_hostname }}.reboot-required"),
            "bios_pending_fact_file": str(self.tmp / "nodes" / "{{ inventory_hostname }}.pending.fact"),
        }
        # hosts.yml, not the folder: Ansible would read plan.json, cables.csv and bom.csv beside it as
        # inventory sources too (hundreds of bogus hosts); group_vars/ beside hosts.yml still apply.
        return run_playbook(
            "bios.yml",
            self.inventory / "hosts.yml",
            check=check,
            extravars=base | extravars,
            keep_artifacts=keep,
        )

    def get(self, node: str, path: str) -> Any:
        r = requests.get(self.urls[node] + path, auth=self.auth, verify=str(self.ca), timeout=10)
        r.raise_for_status()
        return r.json()

    def post(self, node: str, path: str, body: dict[str, Any]) -> None:
        r = requests.post(self.urls[node] + path, json=body, auth=self.auth, verify=str(self.ca), timeout=10)
        r.raise_for_status()

    def system(self, node: str) -> str:
        return str(self.get(node, "/redfish/v1/Systems")["Members"][0]["@odata.id"])

    def bios(self, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(current, staged) attributes, following the links as a client must."""
        res = self.get(node, self.get(node, self.system(node))["Bios"]["@odata.id"])
        staged = self.get(node, res["@Redfish.Settings"]["SettingsObject"]["@odata.id"])
        return res["Attributes"], staged["Attributes"]

    def reset(self, node: str, kind: str = "GracefulRestart") -> None:
        self.post(node, self.system(node) + "/Actions/ComputerSystem.Reset", {"ResetType": kind})

    def factory(self, node: str) -> None:
        """Factory BIOS defaults, applied (Bios.ResetBios stages them, a reset applies them)."""
        res = self.get(node, self.get(node, self.system(node))["Bios"]["@odata.id"])
        self.post(node, res["Actions"]["#Bios.ResetBios"]["target"], {})
        self.reset(node, "ForceRestart")
        self.pending_file(node).unlink(missing_ok=True)
        (self.tmp / "nodes" / f"{node}.pending.fact").unlink(missing_ok=True)
