"""Reading a node's BMC over Redfish from the controller, for the validators (BIOS attributes, BIOS version).

The account is the one the bios role uses: CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD (or the
file CLUSTERFORGE_BMC_PASSWORD_FILE); the CA bundle CLUSTERFORGE_BMC_CA or the inventory's
`bios_ca_path`; TLS is always verified. The password is sent in the Authorization header only and never
appears in an error or a log. A BMC that cannot be read (refused, timeout, 401, not Redfish) is
:class:`CheckError` (verdict ``error``), never a pass.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import urllib.error
import urllib.request
from typing import Any

from clusterforge.certify.checks import CheckError, expect_equal
from clusterforge.certify.fixes import hint
from clusterforge.plan.expect import NodeExpect

ACCOUNT_HELP = (
    "no BMC account: set CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD "
    "(or CLUSTERFORGE_BMC_PASSWORD_FILE)"
)


class Redfish:
    """A minimal read-only Redfish client: basic auth, verified TLS, a deadline per request."""

    def __init__(self, address: str, user: str, password: str, ca: str | None, timeout: float) -> None:
        self.base = f"https://{address}"
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self._ctx = ssl.create_default_context(cafile=ca or None)
        self.timeout = timeout

    def __repr__(self) -> str:  # never the credentials
        return f"Redfish({self.base!r})"

    def get(self, path: str) -> dict[str, Any]:
        req = urllib.request.Request(
            self.base + path, headers={"Authorization": self._auth, "Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ctx) as resp:
                data = json.loads(resp.read().decode())
        except urllib.error.HTTPError as exc:
            raise CheckError(f"BMC {self.base}: HTTP {exc.code} {exc.reason} on GET {path}") from None
        except (urllib.error.URLError, OSError) as exc:  # refused, TLS, timeout
            reason = getattr(exc, "reason", exc)
            raise CheckError(f"BMC {self.base}: cannot GET {path}: {reason}") from None
        except ValueError as exc:
            raise CheckError(f"BMC {self.base}: GET {path} is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CheckError(f"BMC {self.base}: GET {path} is not a Redfish resource")
        return data

    def system_uri(self, system_id: str = "") -> str:
        """The one ComputerSystem of this BMC (or the one whose id is ``system_id``)."""
        root = self.get("/redfish/v1/")
        link = (root.get("Systems") or {}).get("@odata.id")
        if not link:
            raise CheckError(f"BMC {self.base}: the service root links no Systems collection")
        uris = [m["@odata.id"] for m in self.get(link).get("Members", []) if isinstance(m, dict)]
        if system_id:
            uris = [u for u in uris if u.rstrip("/").rsplit("/", 1)[-1] == system_id]
        if len(uris) != 1:
            raise CheckError(
                f"BMC {self.base}: {len(uris)} ComputerSystems match (bios_system_id={system_id or 'unset'})"
            )
        return str(uris[0])

    def bios(self, system_id: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
        """(current attributes, staged attributes) of the system's Bios resource, following its links."""
        uri = self.system_uri(system_id)
        link = self.get(uri).get("Bios", {}).get("@odata.id")
        if not link:
            raise CheckError(f"BMC {self.base}: {uri} has no Bios resource")
        res = self.get(link)
        settings = res.get("@Redfish.Settings", {}).get("SettingsObject", {}).get("@odata.id")
        staged = self.get(settings).get("Attributes", {}) if settings else {}
        return dict(res.get("Attributes") or {}), dict(staged or {})

    def bios_version(self, system_id: str = "") -> str:
        """The ComputerSystem's ``BiosVersion`` (the system firmware the BMC reports)."""
        uri = self.system_uri(system_id)
        version = self.get(uri).get("BiosVersion")
        if not isinstance(version, str) or not version.strip():
            raise CheckError(f"BMC {self.base}: {uri} reports no BiosVersion")
        return version.strip()


def bmc_password() -> str:
    """CLUSTERFORGE_BMC_PASSWORD, else the content of the file CLUSTERFORGE_BMC_PASSWORD_FILE."""
    pw = os.environ.get("CLUSTERFORGE_BMC_PASSWORD", "")
    path = os.environ.get("CLUSTERFORGE_BMC_PASSWORD_FILE", "")
    if not pw and path:
        try:
            with open(path) as fh:
                pw = fh.read().rstrip("\n")
        except OSError as exc:
            raise CheckError(f"cannot read CLUSTERFORGE_BMC_PASSWORD_FILE {path}: {exc.strerror}") from None
    return pw


def client(address: str, knobs: dict[str, Any], timeout: float) -> Redfish:
    """A client of the BMC at ``address`` with the account and CA from the environment (or the inventory's
    ``bios_ca_path``); CheckError when no account is set."""
    user, password = os.environ.get("CLUSTERFORGE_BMC_USER"), bmc_password()
    if not user or not password:
        raise CheckError(ACCOUNT_HELP)
    ca = os.environ.get("CLUSTERFORGE_BMC_CA") or knobs.get("bios_ca_path") or None
    return Redfish(address, user, password, ca, timeout)


def check_bios_version(node: NodeExpect) -> str:
    """``software.bios`` (the desired state's pin) against the ``BiosVersion`` the node's BMC reports (exact
    match): CheckFailed when it differs, CheckError when the BMC cannot be read or the node has no BMC in
    the plan. Returns the version found."""
    pin = str(node.pins["bios"])
    if not node.bmc.get("address"):
        raise CheckError(
            f"software.bios is pinned ({pin}) but {node.name} has no BMC in the spec "
            "(pools[].nodes[].bmc): its BIOS version cannot be read"
        )
    rf = client(str(node.bmc["address"]), node.knobs, float(node.timeout))
    found = rf.bios_version(str(node.knobs.get("bios_system_id") or ""))
    expect_equal(
        f"system BIOS version (BMC {node.bmc['address']}, Redfish BiosVersion)",
        pin,
        found,
        hint("bios_version", node.name),
    )
    return found
