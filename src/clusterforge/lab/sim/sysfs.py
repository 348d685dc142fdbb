"""The sysfs views rendered at boot into the overlays (see :mod:`.boot`): RDMA devices, rail ECN knobs,
rdma_cm configfs, CPU idle/frequency, THP and hugepages. Paths are the real ones; writes go to the tmpfs
upper layers and therefore last until the next boot, as on real hardware.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import linkerr, paths
from . import state as S

LANE = {"MT4129": (100, "NDR"), "MT4131": (200, "XDR"), "MT4123": (50, "HDR"), "MT4125": (50, "HDR")}
COUNTERS = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_wait",
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
]
HW_COUNTERS = [
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "rx_read_requests",
    "rx_write_requests",
    "rx_atomic_requests",
    "lifespan",
]
ROCE_HW_COUNTERS = [
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rx_icrc_encapsulated",
]
NGIDS = 16
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
# (name, description, exit latency us, target residency us)
INTEL_IDLE = [
    ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    ("C1", "MWAIT 0x00", 1, 1),
    ("C1E", "MWAIT 0x01", 2, 4),
    ("C6", "MWAIT 0x20", 290, 600),
]
ACPI_IDLE = [
    ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    ("C1", "ACPI FFH MWAIT 0x0", 1, 2),
    ("C2", "ACPI IOPORT 0x814", 18, 36),
]


def put(path: str | Path, value: object) -> None:
    target = path if isinstance(path, Path) else paths.p(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    paths.replace_text(target, f"{value}\n")  # refreshed every tick: readers never see it empty


def rate_text(st: dict[str, Any], nic: dict[str, Any]) -> str:
    lane, name = LANE.get(st["sku"]["compute_nics"]["part_id"], (100, "NDR"))
    rate = S.port_rate(st, nic)
    return f"{rate} Gb/sec ({max(1, rate // lane)}X {name})"


def _gid(prefix: str, tail: str) -> str:
    return f"{prefix}:{tail}"


def netdev_ipv4(nic: dict[str, Any]) -> list[str]:
    """IPv4 addresses on the rail netdev right now (the plan's address under a test root)."""
    if not paths.in_node():
        return [nic["ip"]] if nic.get("ip") else []
    r = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "dev", nic["netdev"]], capture_output=True, text=True, check=False
    )
    return [ln.split()[3].split("/")[0] for ln in r.stdout.splitlines() if len(ln.split()) > 3]


def gid_table(nic: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(gid, type, ndev) per index, as the kernel builds it for the port."""
    if S.link_layer(nic) == "InfiniBand":
        return [(_gid("fe80:0000:0000:0000", nic["port_guid"]), "IB/RoCE v1", "")]
    ll = _gid("fe80:0000:0000:0000", nic["port_guid"])
    out = [(ll, "IB/RoCE v1", nic["netdev"]), (ll, "RoCE v2", nic["netdev"])]
    for ip in netdev_ipv4(nic):
        b = ipaddress.IPv4Address(ip).packed
        g = f"0000:0000:0000:0000:0000:ffff:{b[0]:02x}{b[1]:02x}:{b[2]:02x}{b[3]:02x}"
        out += [(g, "IB/RoCE v1", nic["netdev"]), (g, "RoCE v2", nic["netdev"])]
    return out


def refresh_ports(st: dict[str, Any]) -> None:
    """Port state, rate, GIDs and counters of every HCA (the parts faults and addresses change)."""
    base = paths.p("/sys/class/infiniband")
    if not base.is_dir():
        return
    for nic in st["nics"]:
        port = base / nic["hca"] / "ports/1"
        if not port.parent.parent.is_dir():
            continue
        up = S.port_up(st, nic)
        put(port / "state", "4: ACTIVE" if up else "1: DOWN")
        put(port / "phys_state", "5: LinkUp" if up else "2: Polling")
        put(port / "rate", rate_text(st, nic))
        put(port / "link_layer", S.link_layer(nic))
        table = gid_table(nic)
        for i in range(NGIDS):
            gid, typ, ndev = table[i] if i < len(table) else (ZERO_GID, "", "")
            put(port / f"gids/{i}", gid)
            put(port / f"gid_attrs/types/{i}", typ)
            put(port / f"gid_attrs/ndevs/{i}", ndev)
        down = 0 if up else 1
        if not (port / "counters/link_downed").exists() or down:
            put(port / "counters/link_downed", down)
    linkerr.refresh(st)  # a `link-errors` fault's rising counter


def render_rdma(st: dict[str, Any]) -> None:
    base = paths.p("/sys/class/infiniband")
    cn = st["sku"]["compute_nics"]
    for nic in st["nics"]:
        d = base / nic["hca"]
        ib = S.link_layer(nic) == "InfiniBand"
        for k, v in {
            "node_type": "1: CA",
            "node_guid": nic["node_guid"],
            "sys_image_guid": nic["node_guid"],
            "fw_ver": nic["fw"],
            "hca_type": cn["part_id"],
            "hw_rev": "0x0",
            "board_id": nic["board_id"],
            "node_desc": f"{st['node']['name']} {nic['hca']}",
        }.items():
            put(d / k, v)
        put(d / "device/numa_node", nic["numa"])
        put(d / "device/vendor", "0x15b3")
        put(d / "device/device", S.NIC_PCI_IDS.get(cn["part_id"], "0x1021"))
        put(d / "device/local_cpulist", _numa_cpus(st, nic["numa"]))
        (d / "device/net" / nic["netdev"]).mkdir(parents=True, exist_ok=True)
        port = d / "ports/1"
        put(port / "lid", f"0x{nic['lid']:x}")
        put(port / "sm_lid", f"0x{nic['sm_lid']:x}")
        put(port / "lid_mask_count", 0)
        put(port / "sm_sl", 0)
        put(port / "cap_mask", "0xa751e848" if ib else "0x00010000")
        put(port / "pkeys/0", "0xffff")
        for c in COUNTERS:
            put(port / f"counters/{c}", 0)
        for c in HW_COUNTERS + ([] if ib else ROCE_HW_COUNTERS):
            put(port / f"hw_counters/{c}", 0)
    refresh_ports(st)


def _numa_cpus(st: dict[str, Any], numa: int) -> str:
    from . import gpu

    return gpu.cpu_affinity(st, numa)


def render_ecn(st: dict[str, Any]) -> None:
    """/sys/class/net/<rail>/ecn/ (MLNX_OFED layout) in each RoCE rail's /sys/devices/virtual/net overlay.

    A rail whose netdev does not exist yet is done later by the sim daemon (``ecn/`` appears with it)."""
    from . import mounts

    for nic in st["nics"]:
        if S.link_layer(nic) != "Ethernet":
            continue
        d = paths.p(f"/sys/devices/virtual/net/{nic['netdev']}/ecn")
        if (d / "roce_np").exists() or (paths.in_node() and not mounts.rail_overlay(nic["netdev"])):
            continue
        for point in ("roce_np", "roce_rp"):
            for prio in range(8):
                put(d / point / "enable" / str(prio), 0)
        # the CNP DSCP and 802.1p priority where MLNX_OFED/DOCA's mlx5 shows them (firmware defaults)
        put(d / "roce_np/cnp_dscp", 48)
        put(d / "roce_np/cnp_802p_prio", 6)
        put(d / "roce_np/params/min_time_between_cnps", 4)
        for k, v in {
            "rpg_time_reset": 300,
            "rpg_byte_reset": 32767,
            "rpg_threshold": 1,
            "rpg_max_rate": 0,
            "rpg_ai_rate": 5,
            "rpg_hai_rate": 50,
            "rpg_gd": 11,
            "rpg_min_dec_fac": 50,
            "rpg_min_rate": 1,
            "rate_to_set_on_first_cnp": 0,
            "dce_tcp_g": 1019,
            "dce_tcp_rtt": 1,
            "rate_reduce_monitor_period": 4,
            "initial_alpha_value": 1023,
        }.items():
            put(d / "roce_rp/params" / k, v)


def render_configfs() -> None:
    paths.p("/sys/kernel/config/rdma_cm").mkdir(parents=True, exist_ok=True)


def populate_rdma_cm(st: dict[str, Any]) -> None:
    """configfs semantics: a mkdir'ed /sys/kernel/config/rdma_cm/<hca> gets its ports/N/ attributes."""
    base = paths.p("/sys/kernel/config/rdma_cm")
    if not base.is_dir():
        return
    hcas = {n["hca"] for n in st["nics"]}
    for d in base.iterdir():
        if d.is_dir() and d.name in hcas and not (d / "ports/1").exists():
            put(d / "ports/1/default_roce_tos", 0)
            put(d / "ports/1/default_roce_mode", "RoCE v2")


def cpus() -> list[int]:
    spec = paths.read("/sys/devices/system/cpu/present").strip() or f"0-{(os.cpu_count() or 1) - 1}"
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def cmdline_params(cmdline: str) -> dict[str, str]:
    out = {}
    for tok in cmdline.split():
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def idle_driver(st: dict[str, Any], params: dict[str, str]) -> tuple[str, list[tuple[str, str, int, int]]]:
    if params.get("idle") == "poll" or params.get("cpuidle.off") == "1":
        return "none", []
    intel = st["sku"]["cpu"]["vendor"] == "intel" and params.get("intel_idle.max_cstate") != "0"
    states = INTEL_IDLE if intel else ACPI_IDLE
    limit = params.get("intel_idle.max_cstate") if intel else params.get("processor.max_cstate")
    if limit is not None and limit.isdigit():
        states = states[: max(int(limit), 1) + 1]
    return ("intel_idle" if intel else "acpi_idle"), states


def render_cpu(st: dict[str, Any], params: dict[str, str]) -> None:
    base = paths.p("/sys/devices/system/cpu")
    driver, states = idle_driver(st, params)
    put(base / "cpuidle/current_driver", driver)
    put(base / "cpuidle/current_governor", "menu")
    put(base / "cpuidle/current_governor_ro", "menu")
    put(base / "cpuidle/available_governors", "ladder menu teo")
    intel = st["sku"]["cpu"]["vendor"] == "intel"
    gov = (
        "performance powersave"
        if intel
        else "conservative ondemand userspace powersave performance schedutil"
    )
    for c in cpus():
        cd = base / f"cpu{c}"
        idle = cd / "cpuidle"
        if idle.exists():
            for old in idle.glob("state*"):
                shutil.rmtree(old, ignore_errors=True)
        for i, (name, desc, lat, res) in enumerate(states):
            sd = idle / f"state{i}"
            for k, v in {
                "name": name,
                "desc": desc,
                "latency": lat,
                "residency": res,
                "disable": 0,
                "default_status": "enabled",
                "usage": 0,
                "time": 0,
                "above": 0,
                "below": 0,
                "rejected": 0,
            }.items():
                put(sd / k, v)
        fd = cd / "cpufreq"
        if fd.is_symlink():
            fd.unlink()
        for k, v in {
            "scaling_driver": "intel_pstate" if intel else "acpi-cpufreq",
            "scaling_governor": "powersave" if intel else "schedutil",
            "scaling_available_governors": gov,
            "cpuinfo_min_freq": 800000,
            "cpuinfo_max_freq": 3800000,
            "scaling_min_freq": 800000,
            "scaling_max_freq": 3800000,
            "scaling_cur_freq": 2000000,
            "affected_cpus": c,
            "related_cpus": c,
        }.items():
            put(fd / k, v)
    put(paths.p("/sys/module/intel_idle/parameters/max_cstate"), params.get("intel_idle.max_cstate", "9"))
    put(paths.p("/sys/module/processor/parameters/max_cstate"), params.get("processor.max_cstate", "9"))


def render_mm(st: dict[str, Any], params: dict[str, str]) -> None:
    thp = paths.p("/sys/kernel/mm/transparent_hugepage/enabled")
    cur = params.get("transparent_hugepage")
    if cur not in ("always", "madvise", "never"):
        real = thp.read_text() if thp.exists() else "always [madvise] never"
        cur = real[real.find("[") + 1 : real.find("]")] if "[" in real else "madvise"
    put(thp, " ".join(f"[{m}]" if m == cur else m for m in ("always", "madvise", "never")))
    for size, count in st["kernel"]["hugepages"].items():
        d = paths.p(f"/sys/kernel/mm/hugepages/hugepages-{size}kB")
        put(d / "nr_hugepages", count)
        put(d / "free_hugepages", count)
        for k in ("resv_hugepages", "surplus_hugepages", "nr_overcommit_hugepages"):
            put(d / k, 0)


def hugepages_now() -> dict[str, int]:
    """Current pool sizes as the sysfs files say (roles may have written them since boot)."""
    out = {}
    for size in ("1048576", "2048"):
        try:
            out[size] = int(
                paths.read(f"/sys/kernel/mm/hugepages/hugepages-{size}kB/nr_hugepages").strip() or 0
            )
        except ValueError:
            out[size] = 0
    return out


THP_CHOICES = {
    "enabled": ("always", "madvise", "never"),
    "defrag": ("always", "defer", "defer+madvise", "madvise", "never"),
}


def normalize_thp() -> None:
    """Kernel read-back format after a write: "always" -> "[always] madvise never" (bad values: ignored)."""
    for name, choices in THP_CHOICES.items():
        f = paths.p(f"/sys/kernel/mm/transparent_hugepage/{name}")
        try:
            text = f.read_text().strip()
        except OSError:
            continue
        if "[" in text or not text:
            continue
        cur = text if text in choices else "madvise"
        paths.replace_text(f, " ".join(f"[{c}]" if c == cur else c for c in choices) + "\n")
