"""Kernel modules the roles make resident: each module of the node's compiled desired state
(`desired.modules`: nvidia_peermem on every GPU node, rdma_cm where RoCE QoS is applied, nvidia-fs with
GPUDirect Storage) is loaded now and is named in the modules-load.d file that loads it at the next boot.
A module loaded by hand but not listed for boot passes today and is gone after a reboot: a fail."""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.certify.checks import Probe, expect_none_bad, prefetches
from clusterforge.certify.fixes import hint
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import shell

pytestmark = pytest.mark.quick

#: the role that loads a module -> the fix hint that re-runs that role's part
FIX = {"nvidia_gpu": "peermem", "rdma": "roce_qos", "storage": "storage_gds"}


def initstate(module: dict[str, Any]) -> str:
    return shell("cat {} 2>/dev/null || echo absent", f"/sys/module/{module['sysfs']}/initstate")


def boot_list(module: dict[str, Any]) -> str:
    return shell("cat {} 2>/dev/null || echo '# absent'", str(module["boot_file"]))


@prefetches
def commands(node: NodeExpect) -> list[str]:
    mods = node.desired.get("modules") or []
    return [*(initstate(m) for m in mods), *(boot_list(m) for m in mods)]


def listed(text: str) -> set[str]:
    """Module names a modules-load.d file lists (one per line; '#' and ';' start comments)."""
    out = set()
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", ";")):
            out.add(line.replace("-", "_"))
    return out


def test_resident(node: NodeExpect, probe: Probe) -> None:
    mods = node.desired.get("modules")
    if mods is None:
        raise KeyError(
            "plan.json has no `desired.modules` (a plan compiled before them): re-run `clusterforge plan`"
        )
    bad: dict[str, str] = {}
    fixes: list[str] = []
    for m in mods:
        now = probe.run(initstate(m)).strip()
        at_boot = m["sysfs"] in listed(probe.run(boot_list(m)))
        problems = ([] if now == "live" else [f"not loaded ({now})"]) + (
            [] if at_boot else [f"not in {m['boot_file']}"]
        )
        if problems:
            bad[m["name"]] = ", ".join(problems)
            fixes.append(hint(FIX[str(m["role"])], node.name))
    expect_none_bad(
        "kernel modules",
        bad,
        ", ".join(f"{m['name']} loaded and in {m['boot_file']}" for m in mods) or "none",
        "; ".join(dict.fromkeys(fixes)),
    )
