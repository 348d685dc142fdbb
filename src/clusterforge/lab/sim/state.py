"""Node state: the JSON document every simulated tool renders from.

``initial_state(plan, node)`` builds it on the host from plan.json; the lab writes it to
``/var/lib/clusterforge-sim/state.json`` in the node's overlay before the first boot. It persists across
reboots (it is a file in the node's root filesystem); what real hardware forgets at a reboot is reset by
the boot unit (:mod:`.boot`). Schema: see docs/simulator.md.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

from . import paths

SCHEMA = 1
# Real HGX 8-GPU board layout (nvidia-smi -q of an 8x H100 HGX, tests/fixtures/real gpud__1).
HGX_GPU_BUSES = [0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB]
_VBIOS = {"hopper": "96.00.74.00.0D", "ampere": "92.00.45.00.06", "blackwell": "97.00.51.00.01"}
_DEVICE_IDS = {"H100": "2330", "H200": "2335", "A100-SXM4-80GB": "20B2", "A100": "20B0", "B200": "2901"}
NIC_PCI_IDS = {"MT4129": "0x1021", "MT4123": "0x101b", "MT4125": "0x101d", "MT4131": "0x1023"}
NIC_BOARD_IDS = {"MT4129": "MT_0000000838", "MT4123": "MT_0000000223"}
DEFAULT_SYSCTL = {  # a freshly booted Debian 12 two-socket server
    "kernel.numa_balancing": "1",
    "vm.zone_reclaim_mode": "0",
    "vm.swappiness": "60",
    "vm.max_map_count": "65530",
    "vm.min_free_kbytes": "67584",
    "vm.dirty_ratio": "20",
    "vm.dirty_background_ratio": "10",
    "vm.overcommit_memory": "0",
    "vm.stat_interval": "1",
    "kernel.nmi_watchdog": "1",
    "kernel.timer_migration": "1",
    "kernel.hung_task_timeout_secs": "120",
    "kernel.sched_autogroup_enabled": "1",
    "vm.nr_hugepages": "0",
    # host-global (not per network namespace): read-only from a container, so simulated like the rest
    "net.core.rmem_max": "212992",
    "net.core.wmem_max": "212992",
    "net.core.rmem_default": "212992",
    "net.core.wmem_default": "212992",
}


def _h(*parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


def gpu_device_id(model: str) -> str:
    for key in sorted(_DEVICE_IDS, key=len, reverse=True):
        if key in model:
            return _DEVICE_IDS[key]
    return "2330"


def _eui64(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    e = [*b[:3], 0xFF, 0xFE, *b[3:]]
    return ":".join(f"{e[i]:02x}{e[i + 1]:02x}" for i in range(0, 8, 2))


def default_qos() -> dict[str, Any]:
    """ConnectX defaults after a driver load: trust pcp, no PFC, mlx5's default prio->tc map."""
    return {
        "dcbx": "os",
        "trust": "pcp",
        "pfc": [0] * 8,
        "dscp2prio": {str(d): d >> 3 for d in range(64)},
        "app": [],  # the DCB APP table's DSCP entries [dscp, prio] (dcb app / mlnx_qos --dscp2prio)
        "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7],
        "tsa": ["vendor"] * 8,
        "tcbw": [0] * 8,
        "cable_len": 7,
        "buffer_size": None,
        "prio2buffer": None,
    }


def default_mlxconfig(link_layer: str) -> dict[str, Any]:
    return {
        "MEMIC_BAR_SIZE": 0,
        "MEMIC_SIZE_LIMIT": 1,
        "FLEX_PARSER_PROFILE_ENABLE": 0,
        "ROCE_NEXT_PROTOCOL": 254,
        "NUM_OF_VFS": 0,
        "SRIOV_EN": 0,
        "PF_LOG_BAR_SIZE": 5,
        "NUM_PF_MSIX": 63,
        "LINK_TYPE_P1": 1 if link_layer == "InfiniBand" else 2,
        "KEEP_ETH_LINK_UP_P1": 1,
        "KEEP_IB_LINK_UP_P1": 0,
        "ROCE_CC_PRIO_MASK_P1": 255,
        "CNP_DSCP_P1": 48,
        "CNP_802P_PRIO_P1": 6,
        "ADVANCED_PCI_SETTINGS": 0,
        "PCI_WR_ORDERING": 0,
        "ATS_ENABLED": 0,
        "PCI_ATOMIC_MODE": 0,
        "ADVANCED_POWER_SETTINGS": 0,
        "CQE_COMPRESSION": 0,
        "LRO_LOG_TIMEOUT0": 6,
    }


def _gpus(node: str, sku: dict[str, Any]) -> list[dict[str, Any]]:
    g = sku["gpu"]
    out = []
    for i in range(g["count"]):
        bus = HGX_GPU_BUSES[i] if g["count"] <= len(HGX_GPU_BUSES) else 0x10 + i
        h = _h(node, "gpu", i)
        u = h[:32]
        out.append(
            {
                "index": i,
                "bus_id": f"00000000:{bus:02X}:00.0",
                "serial": str(1650124000000 + int(h[:8], 16) % 999999),
                "uuid": f"GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:32]}",
                "vbios": _VBIOS.get(g["architecture"], "96.00.74.00.0D"),
                "module_id": [2, 4, 3, 1, 7, 5, 8, 6][i % 8],
                "persistence": False,
                "ecc": {"current": True, "pending": True},
                "mig": {"current": False, "pending": False},
                "aggregate": {
                    "sram_correctable": 0,
                    "sram_uncorrectable": 0,
                    "dram_correctable": 0,
                    "dram_uncorrectable": 0,
                },
                "remap": {"correctable": 0, "uncorrectable": 0},
                "fabric": "In Progress",
            }
        )
    return out


def _nics(node_d: dict[str, Any], sku: dict[str, Any], software: dict[str, Any]) -> list[dict[str, Any]]:
    cn = sku["compute_nics"]
    fw = software.get("nic_firmware") or ""
    if not str(fw).startswith(cn["firmware_prefix"]):
        fw = f"{cn['firmware_prefix']}39.1002"
    plan_rails = {r["index"]: r for r in node_d.get("rails", [])}
    out = []
    for r in cn["rails"]:
        pr = plan_rails.get(r["rail"], {})
        h = _h(node_d["name"], "nic", r["rail"])
        mac = pr.get("mac") or "02:" + ":".join(h[i : i + 2] for i in range(0, 10, 2))
        node_guid = f"a088:c203:00{h[0:2]}:{h[2:6]}"
        ib = cn["link_layer"] == "InfiniBand"
        out.append(
            {
                "rail": r["rail"],
                "hca": r["hca"],
                "netdev": r["netdev"],
                "pci": r["pci"],
                "numa": r["numa"],
                "gpu": r["gpu"],
                "gpu_link": r.get("gpu_link", "PIX"),
                "ip": pr.get("ip"),
                "prefix": pr.get("prefix", 24),
                "mtu": pr.get("mtu", 9000 if not ib else 4092),
                "mac": mac,
                "node_guid": node_guid,
                "port_guid": node_guid if ib else _eui64(mac),
                "fw": fw,
                "board_id": NIC_BOARD_IDS.get(cn["part_id"], "MT_0000000838"),
                "lid": (node_d.get("ordinal", 0) * 16 + r["rail"] + 2) if ib else 0,
                "sm_lid": 1 if ib else 0,
                "qos": default_qos(),
                "mlxconfig": {"current": default_mlxconfig(cn["link_layer"]), "pending": {}},
            }
        )
    return out


def switch_description(name: str, model: str) -> str:
    """A Mellanox/NVIDIA InfiniBand switch's NodeDescription for the switch called ``name``: the
    ``MF0;<name>:M<model>/U1`` form of the real captures (ibnetdiscover of a Quantum-2 fabric:
    "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"; iblinkinfo of an SB7700: "MF0;SB7700:MSB7700/U1")."""
    return f"MF0;{name}:M{model.upper()}/U1"


def far_ends(plan: dict[str, Any], node_d: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Rail index -> the far end of its cable as the plan wires it (the same `rail_neighbours` the
    cabling validator compares with): the leaf's node description and the leaf port. Empty when the plan
    has no fabric entry for the node or the rails are not InfiniBand (RoCE neighbours come from LLDP)."""
    from clusterforge.plan.desired_fabric import fabric_entry, rail_neighbours

    fabric = fabric_entry(plan, str(node_d.get("fabric")))
    if fabric is None or not all("leaf" in r for r in node_d.get("rails", [])):
        return {}
    return {
        int(w["rail"]): {
            "description": switch_description(str(w["switch"]), str(fabric["switch_model"])),
            "port": int(w["switch_port"]),
        }
        for w in rail_neighbours(node_d)
        if w["link_layer"] == "InfiniBand"
    }


def initial_state(plan: dict[str, Any], node_name: str) -> dict[str, Any]:
    """The node's first state.json, from its plan.json entry, its SKU and the plan's software."""
    node_d = next((n for n in plan["nodes"] if n["name"] == node_name), None)
    if node_d is None:
        raise KeyError(f"node {node_name!r} is not in the plan")
    sku = copy.deepcopy(plan["skus"][node_d["sku"]])
    software = copy.deepcopy(plan.get("software") or {})
    nics = _nics(node_d, sku, software)
    ends = far_ends(plan, node_d)
    qos = {int(r["index"]): r.get("qos") or {} for r in (node_d.get("desired") or {}).get("rails") or []}
    for n in nics:
        n["far_end"] = ends.get(int(n["rail"]))
        # RoCE: the plan's lossless priority (desired state), where a pause-storm fault sends its PFC frames
        n["lossless_priority"] = qos.get(int(n["rail"]), {}).get("lossless_priority")
    return {
        "schema": SCHEMA,
        "node": {
            k: node_d.get(k)
            for k in (
                "name",
                "pool",
                "sku",
                "rack",
                "ordinal",
                "fabric",
                "fabric_type",
                "mgmt_ip",
                "mgmt_netdev",
            )
        }
        | {"cluster": plan.get("cluster")},
        "sku": sku,
        "software": software,
        "gpus": _gpus(node_name, sku),
        "nics": nics,
        "kernel": {
            "root_uuid": str(uuid.UUID(_h(node_name, "root")[:32])),
            "cmdline": None,  # set at each boot from /boot/grub/grub.cfg
            "hugepages": {"1048576": 0, "2048": 0},
            "modules": {},
            "sysctl_keys": sorted(DEFAULT_SYSCTL),
        },
        "boots": 0,
        "runs": 0,
        "faults": {},
    }


# ---- loading / saving ---------------------------------------------------------------------------------


def load() -> dict[str, Any]:
    with open(paths.p(paths.STATE)) as f:
        data: dict[str, Any] = json.load(f)
    return data


def save(state: dict[str, Any]) -> None:
    target = paths.p(paths.STATE)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, target)


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    lock = paths.p(paths.STATE + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as lf:
        fcntl.flock(lf, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def locked() -> Iterator[dict[str, Any]]:
    """Read-modify-write the state under an exclusive lock (tools run concurrently)."""
    with _lock():
        st = load()
        yield st
        save(st)


@contextlib.contextmanager
def held() -> Iterator[dict[str, Any]]:
    """Read the state and keep the lock while acting on it, writing nothing back.

    For a reader whose side effects follow the state (the periodic fault enforcement): acting on a
    copy read before a writer's change would undo that change, e.g. put a cleared fault's MTU back.
    """
    with _lock():
        yield load()


def next_run(tag: str = "") -> tuple[dict[str, Any], int]:
    """Bump the run counter (seeds the measurement noise) and return (state, counter)."""
    with locked() as st:
        st["runs"] = int(st.get("runs", 0)) + 1
        return st, st["runs"]


# ---- installed simulated packages ---------------------------------------------------------------------


def package(name: str) -> dict[str, Any] | None:
    """Version info shipped by a simulated .deb (None when the package is not installed)."""
    try:
        with open(paths.p(f"{paths.PKG_MARKERS}/{name}.json")) as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return None


def driver() -> dict[str, Any] | None:
    return package("nvidia-driver")


# ---- views --------------------------------------------------------------------------------------------


def fault(st: dict[str, Any], kind: str) -> dict[str, Any] | None:
    f: dict[str, Any] | None = st.get("faults", {}).get(kind)
    return f


def targets(st: dict[str, Any], kind: str, key: str, count: int) -> set[int]:
    """Indices a fault applies to (param ``gpu``/``rail``: N, "N,M" or "all")."""
    f = fault(st, kind)
    if f is None:
        return set()
    val = str(f.get(key, 0))
    if val == "all":
        return set(range(count))
    return {int(x) for x in val.split(",") if x.strip() != ""}


def gone_gpus(st: dict[str, Any]) -> set[int]:
    n = len(st["gpus"])
    return targets(st, "gpu-missing", "gpu", n) | targets(st, "xid-79", "gpu", n)


def visible_gpus(st: dict[str, Any]) -> list[dict[str, Any]]:
    gone = gone_gpus(st)
    return [g for g in st["gpus"] if g["index"] not in gone]


def link_layer(nic: dict[str, Any]) -> str:
    return "InfiniBand" if int(nic["mlxconfig"]["current"].get("LINK_TYPE_P1", 1)) == 1 else "Ethernet"


def port_rate(st: dict[str, Any], nic: dict[str, Any]) -> int:
    rate = int(st["sku"]["compute_nics"]["speed_gbps"])
    if nic["rail"] in targets(st, "rail-half-rate", "rail", len(st["nics"])):
        rate //= 2
    return rate


def port_up(st: dict[str, Any], nic: dict[str, Any]) -> bool:
    return nic["rail"] not in targets(st, "rail-down", "rail", len(st["nics"]))


def far_end(st: dict[str, Any], nic: dict[str, Any]) -> dict[str, Any] | None:
    """What the rail's cable reaches: the planned far end, or the other rail's under a ``cable-swap``
    fault (None when the plan wired it to nothing the simulator knows)."""
    swap = sorted(targets(st, "cable-swap", "rail", len(st["nics"])))
    rail = int(nic["rail"])
    if len(swap) == 2 and rail in swap:
        other = swap[1] if rail == swap[0] else swap[0]
        nic = next((n for n in st["nics"] if int(n["rail"]) == other), nic)
    end: dict[str, Any] | None = nic.get("far_end")
    return end


def nic_by(st: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Find a NIC by HCA name, netdev or PCI address."""
    for n in st["nics"]:
        if name in (n["hca"], n["netdev"], n["pci"], n["pci"].split(":", 1)[1]):
            return n
    return None


def modules_loaded(st: dict[str, Any]) -> dict[str, dict[str, Any]]:
    mods: dict[str, dict[str, Any]] = st["kernel"].setdefault("modules", {})
    return mods
