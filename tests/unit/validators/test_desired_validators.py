"""Every declared setting is certified against the compiled desired state: a hand-changed sysctl fails the
quick tier with expected, found and fix; ACS; the verbs port MTU (not the IPoIB netdev MTU)."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

os_tuning = validator("os_tuning")
gpu = validator("gpu")
rdma = validator("rdma")


def sysctl_node(node: NodeExpect, **changed: str) -> FakeNode:
    """A node with every declared sysctl in effect (as /proc/sys shows them: tabs in tcp_rmem), but
    ``changed`` (key with _ for .) set by hand."""
    values = {k: v.replace(" ", "\t") for k, v in node.desired["sysctls"].items()}
    values |= {k.replace("__", "."): v for k, v in changed.items()}
    return FakeNode({f"cat {os_tuning.sysctl_path(k)}": (0, v + "\n") for k, v in values.items()})


def test_every_declared_sysctl_is_certified(ib_node: NodeExpect) -> None:
    assert len(ib_node.desired["sysctls"]) == 11  # not only kernel.numa_balancing
    os_tuning.test_sysctls(ib_node, sysctl_node(ib_node))
    with pytest.raises(CheckFailed) as exc:
        os_tuning.test_sysctls(ib_node, sysctl_node(ib_node, vm__swappiness="60", vm__max_map_count="65530"))
    assert str(exc.value) == (
        "sysctls: expected vm.max_map_count=1048576, vm.swappiness=10; found vm.max_map_count=65530, "
        "vm.swappiness=60. Fix: run `clusterforge provision --tags sysctl --limit ib-01` (role os_tuning)"
    )
    with pytest.raises(CheckFailed, match=r"found net\.core\.rmem_max=212992"):
        os_tuning.test_sysctls(ib_node, sysctl_node(ib_node, net__core__rmem_max="212992"))


def test_unreadable_sysctl_is_an_error_not_a_pass(ib_node: NodeExpect) -> None:
    node = sysctl_node(ib_node)
    del node.answers["cat /proc/sys/net/core/wmem_max"]
    with pytest.raises(CheckError, match=r"net\.core\.wmem_max"):
        os_tuning.test_sysctls(ib_node, node)


def test_sysctls_are_read_in_the_prefetched_batch(ib_node: NodeExpect) -> None:
    cmds = os_tuning.commands(ib_node)
    assert all(f"cat {os_tuning.sysctl_path(k)}" in cmds for k in ib_node.desired["sysctls"])
    assert not any("cpuinfo" in c for c in cmds)  # the CPU vendor is the SKU's


def test_acs(ib_node: NodeExpect) -> None:
    gpu.test_acs(ib_node, FakeNode({gpu.ACS_STATUS: (0, "none\n")}))
    with pytest.raises(CheckFailed, match=r"found 0000:17:01.0, 0000:3a:01.0. Fix: .*--tags acs"):
        gpu.test_acs(ib_node, FakeNode({gpu.ACS_STATUS: (0, "0000:17:01.0\n0000:3a:01.0\n")}))
    with pytest.raises(CheckError):
        gpu.test_acs(ib_node, FakeNode({}))  # the role's script is missing: not measured


def test_verbs_port_mtu_is_4096_while_the_ipoib_netdev_mtu_is_4092(ib_node: NodeExpect) -> None:
    assert ib_node.rail(0).mtu == ib_node.rail_desired(0)["netdev_mtu"] == 4092
    out = real("ibv_devinfo__h100x8-dell-8hca-cx7-ib-deepep397__4.txt")
    rdma.test_active_mtu(ib_node, FakeNode({rdma.IBV: (0, out)}), 0)
    with pytest.raises(
        CheckFailed, match="expected PORT_ACTIVE, active_mtu 4096; found PORT_ACTIVE, active_mtu 2048"
    ):
        rdma.test_active_mtu(ib_node, FakeNode({rdma.IBV: (0, out.replace("4096 (5)", "2048 (4)"))}), 0)
