"""/etc/nccl.conf carries the plan's NCCL settings (bootstrap interface, GDR level, RoCE GID index and TC)."""

from __future__ import annotations

import pytest

from clusterforge.certify import readers
from clusterforge.certify.checks import Probe, expect_none_bad, prefetches
from clusterforge.certify.fixes import hint
from clusterforge.plan.expect import NodeExpect

pytestmark = pytest.mark.quick


CONF = "if [ -f /etc/nccl.conf ]; then cat /etc/nccl.conf; fi"


@prefetches
def commands(node: NodeExpect) -> list[str]:
    return [CONF]


def expected_conf(node: NodeExpect) -> dict[str, str]:
    """The settings the nccl role writes, from the plan and the role knobs beside it."""
    want = {
        "NCCL_IB_HCA": "=" + ",".join(f"{r.hca}:{r.port}" for r in node.rails),
        "NCCL_SOCKET_IFNAME": node.mgmt_netdev,
    }
    if "nccl_net_gdr_level" in node.knobs:
        want["NCCL_NET_GDR_LEVEL"] = str(node.knobs["nccl_net_gdr_level"])
    if node.roce:
        for knob, key in (("nccl_ib_gid_index", "NCCL_IB_GID_INDEX"), ("nccl_ib_tc", "NCCL_IB_TC")):
            if knob in node.knobs:
                want[key] = str(node.knobs[knob])
    return want


def _same(key: str, want: str, found: str | None) -> bool:
    if found is None:
        return False
    if key.endswith("IFNAME"):  # "=mgmt0" (exact match) and "mgmt0" (prefix) both select the interface
        return found.lstrip("=") == want.lstrip("=")
    return found == want


def test_conf(node: NodeExpect, probe: Probe) -> None:
    have = probe.parse(
        CONF,
        lambda t: readers.kv_lines(t, "/etc/nccl.conf"),
    )
    want = expected_conf(node)
    bad = {k: have.get(k, "<absent>") for k, v in want.items() if not _same(k, v, have.get(k))}
    expect_none_bad(
        "/etc/nccl.conf", bad, " ".join(f"{k}={v}" for k, v in want.items()), hint("nccl", node.name)
    )
