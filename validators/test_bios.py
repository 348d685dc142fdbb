"""BIOS: the attributes the node's BMC reports through Redfish against the vendor map the plan implies.

The Redfish client is `clusterforge.certify.redfish` (shared with `software.bios`, the BIOS version).
Expected values come from the BIOS map of the node's BMC vendor (src/clusterforge/spec/catalog/bios/),
resolved against the plan's tuning (ACS policy), plus `bios_extra_attributes` from the inventory. The BMC
is read from the controller: its address from the plan (`nodes[].bmc`), the account from
CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD (or the file CLUSTERFORGE_BMC_PASSWORD_FILE), the CA
bundle from CLUSTERFORGE_BMC_CA or the inventory's `bios_ca_path` (TLS is always verified). Nodes without
a BMC in the plan are skipped.
A BMC that cannot be read (refused, timeout, 401, no Bios resource) is verdict `error`, never a pass.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import pytest

from clusterforge.certify.checks import CheckFailed, Fix
from clusterforge.certify.redfish import client
from clusterforge.plan.expect import NodeExpect, read_plan_json
from clusterforge.spec import bios

pytestmark = [pytest.mark.full, pytest.mark.bmc]

FIX = Fix("bios", "bios", "then reboot the node (drained) so that the BMC applies the staged settings")


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
    vendor = bmc.get("vendor", "generic")
    rf = client(bmc["address"], node.knobs, float(node.timeout))
    current, staged = rf.bios(str(node.knobs.get("bios_system_id") or ""))
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
