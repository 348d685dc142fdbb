"""Management network: the netdev the node is managed over is up, has the desired MTU, negotiated the
desired link speed, and (when the plan declares a gateway) the node's default route goes through that
gateway on that netdev.

Expected values are the node's compiled desired state (plan.json `desired.management`, plan/
desired_network.py): the speed is the lower of the SKU's management NIC and the spec's switch ports, so a
slower link is a degraded one (a bad cable, optic or switch port), never a spec mismatch. The site's OS
installer configures this network and clusterforge connects over it, so no role rewrites it: a wrong MTU
or route is fixed in the installer's network configuration. Read from sysfs (`/sys/class/net/<netdev>/
operstate`, `mtu`, `speed`: Mb/s, -1 or unreadable when the driver does not know it, which is an error,
never a pass) and from iproute2's `ip -j route show default` (parsed by `clusterforge.hw.iproute`).
"""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.certify.checks import (
    CheckError,
    CheckFailed,
    Probe,
    expect,
    expect_equal,
    prefetches,
    read_cmd,
)
from clusterforge.certify.fixes import hint
from clusterforge.hw import iproute
from clusterforge.plan.expect import NodeExpect

pytestmark = pytest.mark.quick

SYSFS = "/sys/class/net"
ROUTE = "ip -j route show default"
REPLAN = "re-run `clusterforge plan` (it compiles the management network into each node's desired state)"


def desired_mgmt(node: NodeExpect) -> dict[str, Any]:
    """The node's desired `management` section; an error naming the fix for a plan compiled before it."""
    try:
        section = node.desired.get("management")
    except KeyError as exc:
        raise CheckError(str(exc.args[0]) if exc.args else str(exc)) from None
    if not isinstance(section, dict) or not {"netdev", "speed_mbps", "mtu", "gateway"} <= set(section):
        raise CheckError(
            f"plan.json has no management network in {node.name}'s desired state (`desired.management`, "
            f"a plan compiled before it was): {REPLAN}, then certify"
        )
    return section


def sysfs(netdev: str, name: str) -> str:
    return f"{SYSFS}/{netdev}/{name}"


@prefetches
def commands(node: NodeExpect) -> list[str]:
    """What these checks read, fetched in one round trip per node (none for a plan without the section:
    each check then reports that error itself)."""
    try:
        m = desired_mgmt(node)
    except CheckError:
        return []
    reads = [read_cmd(sysfs(m["netdev"], f)) for f in ("operstate", "mtu", "speed")]
    return reads + ([ROUTE] if m["gateway"] else [])


def _read(probe: Probe, netdev: str, name: str) -> str:
    """A sysfs attribute of the management netdev; the netdev itself absent (no /sys/class/net/<netdev>:
    the NIC is missing or the installer named it otherwise) is a measured absence, a fail naming it."""
    path = sysfs(netdev, name)
    try:
        return probe.read(path)
    except CheckError as exc:
        if f"{path}: No such file or directory" not in str(exc):
            raise
    raise CheckFailed(
        f"management netdev {netdev}",
        "present",
        f"absent (no {SYSFS}/{netdev})",
        f"the plan's management netdev is {netdev} (the SKU's management_nic.netdev): check that the NIC is "
        "seen (`ip link`, `lspci`) and that the OS installer names it so (a udev/systemd .link rule by MAC)",
    )


def _int(probe: Probe, netdev: str, name: str) -> int:
    path = sysfs(netdev, name)
    text = _read(probe, netdev, name)
    try:
        return int(text)
    except ValueError:
        raise CheckError(f"{path} on {probe.node} is {text!r}, not a number") from None


def test_mgmt_up(node: NodeExpect, probe: Probe) -> None:
    """The management netdev is operationally up (carrier and link)."""
    netdev = desired_mgmt(node)["netdev"]
    state = _read(probe, netdev, "operstate")
    expect_equal(f"management netdev {netdev} operstate", "up", state, hint("mgmt_link", node.name))


def test_mgmt_mtu(node: NodeExpect, probe: Probe) -> None:
    m = desired_mgmt(node)
    found = _int(probe, m["netdev"], "mtu")
    expect_equal(f"management netdev {m['netdev']} MTU", int(m["mtu"]), found, hint("mgmt_config", node.name))


def test_mgmt_speed(node: NodeExpect, probe: Probe) -> None:
    """The negotiated speed equals the desired one: lower is a degraded link; -1 (unknown) is an error."""
    m = desired_mgmt(node)
    want = int(m["speed_mbps"])
    found = _int(probe, m["netdev"], "speed")
    probe.note("speed_mbps", found)
    if found <= 0:
        raise CheckError(
            f"{sysfs(m['netdev'], 'speed')} on {node.name} is {found}: the driver does not report the "
            "link speed, so it cannot be certified"
        )
    what = f"management netdev {m['netdev']} link speed"
    expect(
        found >= want,
        f"degraded {what}",
        f"{want} Mb/s",
        f"{found} Mb/s",
        hint("mgmt_link", node.name),
    )
    expect(  # faster than both declared ends: the plan's figures are wrong, not the link
        found == want,
        what,
        f"{want} Mb/s",
        f"{found} Mb/s, faster than the plan",
        "declare the hardware's speed (the SKU's management_nic.speed_gbps, fabrics.management.speed_gbps), "
        "then re-plan",
    )


def _hops(r: iproute.Route) -> str:
    via = ", ".join(f"via {h.gateway or '(on-link)'} dev {h.dev}" for h in r.hops)
    return via + (f" metric {r.metric}" if r.metric else "") + (" linkdown" if r.linkdown else "")


def test_mgmt_default_route(node: NodeExpect, probe: Probe) -> None:
    """With a declared gateway: the default route the kernel uses (lowest metric) goes via that gateway on
    the management netdev, every hop of it, and its link is not down."""
    m = desired_mgmt(node)
    gateway, netdev = m["gateway"], m["netdev"]
    if not gateway:
        pytest.skip("the plan declares no gateway (addressing.gateway): no default route is certified")
    routes = iproute.default_routes(probe.parse(ROUTE, iproute.parse))
    probe.note("default_routes", [_hops(r) for r in routes])
    want = f"default via {gateway} dev {netdev}"
    fix = hint("mgmt_route", node.name).replace("<gw>", gateway).replace("<netdev>", netdev)
    expect(bool(routes), "default route", want, "no default route", fix)
    used = routes[0]
    ok = bool(used.hops) and all(h.gateway == gateway and h.dev == netdev for h in used.hops)
    expect(ok and not used.linkdown, "default route", want, f"default {_hops(used)}", fix)
