"""BIOS: the attributes the node's BMC reports through Redfish against the vendor map the plan implies.

Expected values come from the BIOS map of the node's BMC vendor (src/clusterforge/spec/catalog/bios/),
resolved against the plan's tuning (ACS policy), plus `bios_extra_attributes` from the inventory. The BMC
is read from the controller: its address from the plan (`nodes[].bmc`), the account from
CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD (or the file CLUSTERFORGE_BMC_PASSWORD_FILE), the CA
bundle from CLUSTERFORGE_BMC_CA or the inventory's `bios_ca_path` (TLS is always verified). Nodes without
a BMC in the plan are skipped.
A BMC that cannot be read (refused, timeout, 401, no Bios resource) is verdict `error`, never a pass.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import urllib.error
import urllib.request
from functools import cache
from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Fix
from clusterforge.plan.expect import NodeExpect, read_plan_json
from clusterforge.spec import bios

pytestmark = pytest.mark.full

FIX = Fix("bios", "bios", "then reboot the node (drained) so that the BMC applies the staged settings")


class Redfish:
    """A minimal read-only Redfish client: basic auth, verified TLS, a deadline per request."""

    def __init__(self, address: str, user: str, password: str, ca: str | None, timeout: float) -> None:
        self.base = f"https://{address}"
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self._ctx = ssl.create_default_context(cafile=ca or None)
        self.timeout = timeout

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

    def bios(self, system_id: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
        """(current attributes, staged attributes) of the system's Bios resource, following its links."""
        systems = self.get(self.get("/redfish/v1/")["Systems"]["@odata.id"]).get("Members", [])
        uris = [m["@odata.id"] for m in systems]
        if system_id:
            uris = [u for u in uris if u.rstrip("/").rsplit("/", 1)[-1] == system_id]
        if len(uris) != 1:
            raise CheckError(
                f"BMC {self.base}: {len(uris)} ComputerSystems match (bios_system_id={system_id or 'unset'})"
            )
        link = self.get(uris[0]).get("Bios", {}).get("@odata.id")
        if not link:
            raise CheckError(f"BMC {self.base}: {uris[0]} has no Bios resource")
        res = self.get(link)
        settings = res.get("@Redfish.Settings", {}).get("SettingsObject", {}).get("@odata.id")
        staged = self.get(settings).get("Attributes", {}) if settings else {}
        return dict(res.get("Attributes") or {}), dict(staged or {})


def judge(
    node: str,
    address: str,
    vendor: str,
    expected: list[bios.Expected],
    current: dict[str, Any],
    staged: dict[str, Any],
    mode: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """Raise CheckFailed naming every attribute that is not as expected (with its expected and found
    value, and the staged value when a reboot would fix it)."""
    findings = bios.compare(expected, current, mode, extra)
    if not findings:
        return
    found = []
    for f in findings:
        text = f"{f.name}=<absent>" if f.found is None else f"{f.name}={f.found}"
        if f.problem == "ambiguous":
            text = f"{f.name}=<ambiguous: {f.detail}>"
        elif f.name in staged and bios.same(f.expected, staged[f.name]):
            text += f" ({f.expected} staged: reboot pending)"
        elif f.detail:
            text += f" (governed by {f.detail})"
        found.append(text)
    raise CheckFailed(
        f"BIOS attributes of {node} (BMC {address}, {vendor})",
        ", ".join(f"{f.name}={f.expected}" for f in findings),
        ", ".join(found),
        FIX.render(node),
    )


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


@cache
def _plan(path: str) -> dict[str, Any]:
    return read_plan_json(path)


@pytest.fixture(scope="session")
def bios_plan_doc(request: pytest.FixtureRequest) -> dict[str, Any]:
    path = getattr(request.config.option, "cf_plan", None) or os.environ.get("CLUSTERFORGE_PLAN")
    if not path:
        raise pytest.UsageError("test_bios needs the plan: --plan PATH or CLUSTERFORGE_PLAN")
    return _plan(str(path))


def test_bios_attributes(node: NodeExpect, bios_plan_doc: dict[str, Any]) -> None:
    entry = next(n for n in bios_plan_doc["nodes"] if n["name"] == node.name)
    bmc = entry.get("bmc")
    if not bmc:
        pytest.skip("no BMC in the plan for this node")
    user, password = os.environ.get("CLUSTERFORGE_BMC_USER"), bmc_password()
    if not user or not password:
        raise CheckError(
            "no BMC account: set CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD "
            "(or CLUSTERFORGE_BMC_PASSWORD_FILE)"
        )
    vendor = bmc.get("vendor", "generic")
    ca = os.environ.get("CLUSTERFORGE_BMC_CA") or node.knobs.get("bios_ca_path") or None
    client = Redfish(bmc["address"], user, password, ca, float(node.timeout))
    current, staged = client.bios(str(node.knobs.get("bios_system_id") or ""))
    judge(
        node.name,
        bmc["address"],
        vendor,
        bios.resolve(vendor, node.tuning),
        current,
        staged,
        bios.maps()[vendor].match,
        node.knobs.get("bios_extra_attributes") or {},
    )
