"""Compute NICs per rail against the plan: HCA present, port Active/LinkUp at the SKU rate and link layer,
error counters, netdev address and MTU, GPU↔NIC NUMA affinity; GPUDirect (nvidia_peermem), IOMMU
passthrough; on RoCE: DSCP trust, PFC on the lossless priority only, DSCP->priority, ECN, the CNP DSCP and
802.1p priority, RoCE v2 GID, RDMA-CM ToS and the QoS unit that applies them at boot. QoS is read with the
tool the node's RDMA stack applies it with (plan.json `desired.rdma.qos_tool`): mlnx_qos (DOCA-OFED) or
iproute2's dcb (inbox)."""

from __future__ import annotations

import ipaddress

import pytest

from clusterforge.certify import readers, roce_qos
from clusterforge.certify.checks import (
    CheckError,
    CheckFailed,
    Probe,
    expect,
    expect_equal,
    expect_none_bad,
    prefetches,
    read_cmd,
    read_many_cmd,
)
from clusterforge.certify.fixes import hint
from clusterforge.hw import ibstat, ibv_devinfo
from clusterforge.hw.nvidia_smi import parse_topo
from clusterforge.plan.expect import NodeExpect, Rail
from clusterforge.remote.commands import argv, shell

pytestmark = pytest.mark.quick

DEFAULT_QOS_UNIT = "clusterforge-roce-qos.service"
roce_only = pytest.mark.applies(lambda n: n.roce)


PEERMEM = "cat /sys/module/nvidia_peermem/initstate 2>/dev/null || echo absent"
IBV = "ibv_devinfo"


def qos_show(unit: str) -> str:
    return argv("systemctl", "show", "-p", "UnitFileState,ActiveState,Result", unit)


def qos_cmd(r: Rail) -> str:
    return roce_qos.mlnx_qos_cmd(r.netdev)


def dcb_cmds(r: Rail) -> list[str]:
    return roce_qos.dcb_cmds(r.netdev)


def qos_cmds(node: NodeExpect, r: Rail) -> list[str]:
    return roce_qos.qos_cmds(node.desired["rdma"]["qos_tool"], r.netdev)


def cnp_cmds(node: NodeExpect, r: Rail) -> list[tuple[str, str, str]]:
    """(setting, candidate path, command) for the CNP DSCP and 802.1p priority files, in the order the
    role tries them (plan.json `desired.rdma.cnp_*_paths`, {netdev} and {pci} substituted)."""
    rdma = node.desired["rdma"]
    out = []
    for setting, key in (("cnp_dscp", "cnp_dscp_paths"), ("cnp_priority", "cnp_prio_paths")):
        for tpl in rdma[key]:
            path = tpl.replace("{netdev}", r.netdev).replace("{pci}", r.pci or "-")
            out.append((setting, path, shell("cat {} 2>/dev/null || echo absent", path)))
    return out


def netdev_cmds(r: Rail) -> list[str]:
    return [
        shell("[ -e {} ] && echo yes || echo no", f"/sys/class/net/{r.netdev}"),
        read_cmd(f"/sys/class/net/{r.netdev}/operstate"),
        read_cmd(f"/sys/class/net/{r.netdev}/mtu"),
        argv("ip", "-o", "-4", "addr", "show", "dev", r.netdev),
    ]


def gid_cmds(r: Rail, idx: object) -> list[str]:
    base = _sys_ib(r)
    return [
        read_cmd(f"{base}/gids/{idx}"),
        read_cmd(f"{base}/gid_attrs/types/{idx}"),
        shell("cat {} 2>/dev/null || true", f"{base}/gid_attrs/ndevs/{idx}"),
    ]


def ecn_cmds(r: Rail, prio: int) -> list[str]:
    return roce_qos.ecn_cmds(r.netdev, prio)


def tos_cmd(r: Rail) -> str:
    return shell(
        "cat {} 2>/dev/null || echo unset",
        f"/sys/kernel/config/rdma_cm/{r.hca}/ports/{r.port}/default_roce_tos",
    )


@prefetches
def commands(node: NodeExpect) -> list[str]:
    cmds = ["ibstat", IBV, "nvidia-smi topo -m", read_cmd("/proc/cmdline"), PEERMEM]
    for r in node.rails:
        cmds += [
            hca_cmd(r),
            read_many_cmd(_sys_ib(r), "counters/*"),
            *netdev_cmds(r),
            read_cmd(f"/sys/class/infiniband/{r.hca}/device/numa_node"),
        ]
        if node.roce:
            q = node.rail_desired(r.index)["qos"]
            cmds += [*qos_cmds(node, r), *ecn_cmds(r, int(q["lossless_priority"])), tos_cmd(r)]
            cmds += [c for _, _, c in cnp_cmds(node, r)]
            if "nccl_ib_gid_index" in node.knobs:
                cmds += gid_cmds(r, node.knobs["nccl_ib_gid_index"])
    if node.roce:
        cmds.append(qos_show(str(node.knobs.get("rdma_roce_qos_unit", DEFAULT_QOS_UNIT))))
    return cmds


def _ports(probe: Probe) -> dict[str, ibstat.IbCa]:
    return {ca.name: ca for ca in probe.parse("ibstat", ibstat.parse)}


def _rail(node: NodeExpect, rail: int) -> Rail:
    return node.rail(rail)


def _sys_ib(r: Rail) -> str:
    return f"/sys/class/infiniband/{r.hca}/ports/{r.port}"


def hca_cmd(r: Rail) -> str:
    return shell("[ -e {} ] && echo yes || echo no", f"/sys/class/infiniband/{r.hca}")


def _require_hca(node: NodeExpect, probe: Probe, r: Rail) -> None:
    """The rail's HCA exists in sysfs (the kernel's word, no tool needed): its absence is measured, a fail."""
    present = probe.run(hca_cmd(r)).strip()
    expect(
        present == "yes",
        f"rail {r.index} HCA",
        f"{r.hca} present",
        f"absent (no /sys/class/infiniband/{r.hca})",
        hint("nic_hw", node.name),
    )


def test_hca(node: NodeExpect, probe: Probe, rail: int) -> None:
    r = _rail(node, rail)
    cas = _ports(probe)
    expect(
        r.hca in cas,
        f"rail {rail} HCA",
        f"{r.hca} present",
        "absent (ibstat lists " + (", ".join(sorted(cas)) or "no CA") + ")",
        hint("nic_hw", node.name),
    )
    part = node.sku["compute_nics"].get("part_id")
    if part:
        expect_equal(f"{r.hca} CA type", part, cas[r.hca].ca_type, hint("topology", node.name))


def test_port(node: NodeExpect, probe: Probe, rail: int) -> None:
    r = _rail(node, rail)
    ca = _ports(probe).get(r.hca)
    port = next((p for p in ca.ports if p.number == r.port), None) if ca else None
    want = f"Active/LinkUp {r.speed_gbps} Gb/s {r.link_layer}"
    if port is None:
        raise CheckFailed(
            f"{r.hca} port {r.port} (rail {rail})", want, "no such port", hint("nic_hw", node.name)
        )
    found = f"{port.state}/{port.physical_state} {port.rate_gbps:g} Gb/s {port.link_layer}"
    if port.physical_state == "LinkUp" and port.state != "Active" and r.link_layer == "InfiniBand":
        fix = "check that a subnet manager runs on the fabric (link is up, port not configured)"
    elif port.link_layer != r.link_layer:
        fix = hint("rdma_netdev", node.name) + " (port link type)"
    else:
        fix = hint("link_hw", node.name)
    expect(found == want, f"{r.hca} port {r.port} (rail {rail})", want, found, fix)


def test_error_counters(node: NodeExpect, probe: Probe, rail: int) -> None:
    r = _rail(node, rail)
    limits: dict[str, float] = node.sku.get("thresholds", {}).get("ib_error_counters_max", {})
    _require_hca(node, probe, r)
    values = probe.read_many(_sys_ib(r), "counters/*")
    counters = {p.rsplit("/", 1)[1]: v for p, v in values.items()}
    checked = {k: int(v) for k, v in counters.items() if k in limits and v.isdigit()}
    if not checked:
        raise CheckError(f"{r.hca}: none of the thresholded counters readable in {_sys_ib(r)}/counters")
    probe.note("counters", checked)
    bad = {k: v for k, v in checked.items() if v > limits[k]}
    expect_none_bad(
        f"{r.hca} error counters",
        bad,
        f"each under its limit ({node.sku['thresholds'].get('ib_error_counters_source', 'SKU thresholds')})",
        hint("link_hw", node.name),
    )


def test_netdev(node: NodeExpect, probe: Probe, rail: int) -> None:
    """The rail netdev is up, carries the planned address, and has the planned MTU."""
    r = _rail(node, rail)
    exists, operstate, mtu_cmd, addr_cmd = netdev_cmds(r)
    present = probe.run(exists).strip()
    expect(
        present == "yes", f"rail {rail} netdev", f"{r.netdev} present", "absent", hint("nic_hw", node.name)
    )
    state = probe.run(operstate).strip()
    mtu = probe.run(mtu_cmd).strip()
    addrs = probe.run(addr_cmd).split()
    cidrs = [a for a in addrs if "/" in a and a[0].isdigit()]
    want_mtu = node.rail_desired(rail)["netdev_mtu"]
    want = f"up, {r.ip}/{r.prefix}, mtu {want_mtu}"
    found = f"{state}, {','.join(cidrs) or 'no IPv4'}, mtu {mtu}"
    fix = hint("link_hw", node.name) if state == "down" else hint("rdma_netdev", node.name)
    expect(
        state == "up" and f"{r.ip}/{r.prefix}" in cidrs and mtu == str(want_mtu),
        f"{r.netdev} (rail {rail})",
        want,
        found,
        fix,
    )


def test_active_mtu(node: NodeExpect, probe: Probe, rail: int) -> None:
    r = _rail(node, rail)
    devs = probe.parse(IBV, ibv_devinfo.parse)
    port = next((p for d in devs for p in d.ports if d.hca_id == r.hca and p.port == r.port), None)
    if port is None:
        raise CheckError(f"ibv_devinfo -d {r.hca} does not list port {r.port}")
    want_mtu = node.rail_desired(rail)["port_mtu"]  # the port MTU, not the (IPoIB) netdev MTU
    expect(
        port.state == "PORT_ACTIVE" and port.active_mtu == want_mtu,
        f"{r.hca} verbs port (rail {rail})",
        f"PORT_ACTIVE, active_mtu {want_mtu}",
        f"{port.state}, active_mtu {port.active_mtu}",
        hint("rdma_netdev", node.name),
    )


def test_numa(node: NodeExpect, probe: Probe, rail: int) -> None:
    """The rail's NIC and its GPU sit on the planned NUMA node."""
    r = _rail(node, rail)
    _require_hca(node, probe, r)
    nic_numa = probe.read(f"/sys/class/infiniband/{r.hca}/device/numa_node")
    topo = probe.parse("nvidia-smi topo -m", parse_topo)
    aff = topo.affinity.get(f"GPU{r.gpu}")
    gpu_numa = ",".join(map(str, aff.numa_nodes)) if aff and aff.numa_nodes else "unknown"
    expect(
        nic_numa == str(r.numa) and str(r.numa) in gpu_numa.split(","),
        f"rail {rail} NUMA affinity",
        f"{r.hca} and GPU{r.gpu} on NUMA {r.numa}",
        f"{r.hca} on {nic_numa}, GPU{r.gpu} on {gpu_numa}",
        hint("topology", node.name),
    )


def test_peermem(node: NodeExpect, probe: Probe) -> None:
    state = probe.run(PEERMEM).strip()
    expect_equal("nvidia_peermem module", "live", state, hint("peermem", node.name))


def test_iommu(node: NodeExpect, probe: Probe) -> None:
    """IOMMU as the os_tuning role sets it: pt → iommu=pt (passthrough, GPUDirect-friendly, tuning-facts
    §5.2); on → iommu=nopt; off → iommu=off."""
    mode = node.tuning.get("iommu", "pt")
    want = {"pt": "pt", "on": "nopt", "off": "off"}[mode]
    params = probe.parse("cat /proc/cmdline", readers.cmdline)
    found = params.get("iommu", ["<absent>"])[-1]
    expect_equal("kernel command line iommu=", want, found, hint("iommu", node.name))


@roce_only
def test_roce_qos(node: NodeExpect, probe: Probe, rail: int) -> None:
    """Trust DSCP; PFC on the lossless priority only; RoCE and CNP DSCPs map to their priorities."""
    r, q = _rail(node, rail), node.rail_desired(rail)["qos"]
    tool = node.desired["rdma"]["qos_tool"]
    want, found = roce_qos.qos_want_found(probe, tool, r.netdev, q)
    expect(found == want, f"{r.netdev} QoS ({tool}, rail {rail})", want, found, hint("roce_qos", node.name))


@roce_only
def test_roce_ecn(node: NodeExpect, probe: Probe, rail: int) -> None:
    r, q = _rail(node, rail), node.rail_desired(rail)["qos"]
    want, found = roce_qos.ecn_want_found(probe, r.netdev, q)
    prio = int(q["lossless_priority"])
    expect(found == want, f"{r.netdev} ECN on priority {prio}", want, found, hint("roce_qos", node.name))


@roce_only
def test_roce_cnp(node: NodeExpect, probe: Probe, rail: int) -> None:
    """The CNP DSCP and 802.1p priority the driver uses, from the first file that exists of the candidates
    the rdma role writes (MLNX_OFED/DOCA ECN sysfs, then mlx5 debugfs)."""
    r, q = _rail(node, rail), node.rail_desired(rail)["qos"]
    found: dict[str, str] = {}
    tried: dict[str, list[str]] = {}
    for setting, path, cmd in cnp_cmds(node, r):
        tried.setdefault(setting, []).append(path)
        if setting not in found:
            value = probe.run(cmd).strip()
            if value != "absent":
                found[setting] = value
    missing = [s for s in ("cnp_dscp", "cnp_priority") if s not in found]
    if missing:
        raise CheckError(
            f"{r.netdev}: cannot certify the CNP settings: no file for "
            + "; ".join(f"{s} (tried {', '.join(tried[s])})" for s in missing)
            + " - the driver does not expose them here (MLNX_OFED/DOCA ECN sysfs, or mlx5 debugfs mounted)"
        )
    want = f"dscp {q['cnp_dscp']}, 802.1p priority {q['cnp_priority']}"
    got = f"dscp {found['cnp_dscp']}, 802.1p priority {found['cnp_priority']}"
    expect(got == want, f"{r.netdev} CNP (rail {rail})", want, got, hint("roce_qos", node.name))


def roce_gid(ip: str) -> str:
    """The IPv4-mapped GID sysfs shows for an address: 10.245.0.11 → 0000:…:ffff:0af5:000b."""
    packed = ipaddress.IPv6Address(f"::ffff:{ip}").packed
    return ":".join(packed[i : i + 2].hex() for i in range(0, 16, 2))


@roce_only
def test_roce_gid(node: NodeExpect, probe: Probe, rail: int) -> None:
    r = _rail(node, rail)
    idx = node.knobs.get("nccl_ib_gid_index")
    if idx is None:
        raise CheckError("no configured RoCE GID index (nccl_ib_gid_index) in the inventory's group_vars")
    gid, kind, ndev = (probe.run(c).strip() for c in gid_cmds(r, idx))
    want = f"RoCE v2 {roce_gid(r.ip)} on {r.netdev}"
    found = f"{kind} {gid} on {ndev or '?'}"
    expect(
        found == want, f"{r.hca} GID index {idx} (rail {rail})", want, found, hint("rdma_netdev", node.name)
    )


@roce_only
def test_roce_tos(node: NodeExpect, probe: Probe, rail: int) -> None:
    r, tos = _rail(node, rail), str(node.rail_desired(rail)["qos"]["tos"])
    found = probe.run(tos_cmd(r)).strip()
    expect_equal(f"{r.hca} RDMA-CM default ToS (rail {rail})", tos, found, hint("roce_qos", node.name))


@roce_only
def test_qos_unit(node: NodeExpect, probe: Probe) -> None:
    """The unit that re-applies the (non-persistent) QoS settings at boot is enabled and succeeded."""
    unit = str(node.knobs.get("rdma_roce_qos_unit", DEFAULT_QOS_UNIT))
    show = probe.parse(qos_show(unit), readers.systemctl_show)
    found = f"{show.get('UnitFileState') or 'not-found'}/{show.get('ActiveState')}/{show.get('Result')}"
    ok = (
        show.get("UnitFileState") == "enabled"
        and show.get("Result") == "success"
        and show.get("ActiveState") in ("active", "inactive")
    )  # inactive: enabled, not run since provisioning
    expect(
        ok, unit, "enabled, last run succeeded (enabled/active/success)", found, hint("roce_qos", node.name)
    )
