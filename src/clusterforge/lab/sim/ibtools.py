"""``ibstat``, ``ibstatus``, ``ibv_devinfo``, ``ibdev2netdev``, ``show_gids``, ``rdma link``/``rdma dev``;
``smpquery`` lives in :mod:`.smpquery`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from . import paths, smpquery, sysfs
from . import state as S

REAL_RDMA = "/usr/bin/rdma.distrib"  # iproute2's rdma, diverted by the image install


def _guid(colon: str) -> str:
    return "0x" + colon.replace(":", "")


def _mtu_code(mtu: int) -> str:
    return {256: "256 (1)", 512: "512 (2)", 1024: "1024 (3)", 2048: "2048 (4)", 4096: "4096 (5)"}[mtu]


def netdev_mtu(st: dict[str, Any], nic: dict[str, Any]) -> int:
    """The rail netdev's MTU (the real one inside a node; the plan's, or the fault's, under a test root)."""
    try:
        return int(paths.read(f"/sys/class/net/{nic['netdev']}/mtu").strip())
    except ValueError:
        if nic["rail"] in S.targets(st, "mtu-reverted", "rail", len(st["nics"])):
            return int((S.fault(st, "mtu-reverted") or {}).get("mtu", 1500))
        return int(nic.get("mtu") or 9000)


def active_mtu(st: dict[str, Any], nic: dict[str, Any]) -> int:
    """RoCE: the largest IB MTU that fits the netdev MTU; InfiniBand: the port's 4096."""
    if S.link_layer(nic) == "InfiniBand":
        return 4096
    mtu = netdev_mtu(st, nic)
    return max((m for m in (256, 512, 1024, 2048, 4096) if m + 100 <= mtu), default=256)


def netdev_up(st: dict[str, Any], nic: dict[str, Any]) -> bool:
    state = paths.read(f"/sys/class/net/{nic['netdev']}/operstate").strip()
    if not state:  # no such netdev in a node; a test root has no netdevs at all
        return S.port_up(st, nic) and not paths.in_node()
    return state in ("up", "unknown")


def _select(st: dict[str, Any], name: str | None) -> list[dict[str, Any]] | None:
    if name is None:
        return list(st["nics"])
    nic = S.nic_by(st, name)
    return [nic] if nic else None


def ibstat(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    args = [a for a in argv if not a.startswith("-")]
    if "-l" in argv or "--list_of_cas" in argv:
        return "".join(n["hca"] + "\n" for n in st["nics"]), "", 0
    nics = _select(st, args[0] if args else None)
    if nics is None:
        return (
            "",
            f"ibpanic: [{os.getpid()}] main: stat of IB device '{args[0]}' failed: "
            "No such file or directory\n",
            255,
        )
    if "-p" in argv or "--port_list" in argv:
        return "".join(_guid(n["port_guid"]) + "\n" for n in nics), "", 0
    out = []
    for n in nics:
        port = _port_lines(st, n)
        if len(args) > 1:
            out += [line[1:] for line in port[1:]]
            continue
        out += [
            f"CA '{n['hca']}'",
            f"\tCA type: {st['sku']['compute_nics']['part_id']}",
            "\tNumber of ports: 1",
            f"\tFirmware version: {n['fw']}",
            "\tHardware version: 0",
            f"\tNode GUID: {_guid(n['node_guid'])}",
            f"\tSystem image GUID: {_guid(n['node_guid'])}",
            *port,
        ]
    return "\n".join(out) + "\n", "", 0


def _port_lines(st: dict[str, Any], n: dict[str, Any]) -> list[str]:
    up = S.port_up(st, n)
    ib = S.link_layer(n) == "InfiniBand"
    return [
        "\tPort 1:",
        f"\t\tState: {'Active' if up else 'Down'}",
        f"\t\tPhysical state: {'LinkUp' if up else 'Polling'}",
        f"\t\tRate: {S.port_rate(st, n) if up else 40}",
        f"\t\tBase lid: {n['lid'] if up else 0}",
        "\t\tLMC: 0",
        f"\t\tSM lid: {n['sm_lid'] if up else 0}",
        f"\t\tCapability mask: {'0xa751e848' if ib else '0x00010000'}",
        f"\t\tPort GUID: {_guid(n['port_guid'])}",
        f"\t\tLink layer: {S.link_layer(n)}",
    ]


def ibstatus(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    nics = _select(st, argv[0] if argv else None) or []
    blocks = []
    for n in nics:
        up = S.port_up(st, n)
        gid = sysfs.gid_table(n)[0][0]
        blocks.append(
            f"Infiniband device '{n['hca']}' port 1 status:\n"
            f"\tdefault gid:\t {gid}\n\tbase lid:\t 0x{n['lid']:x}\n\tsm lid:\t\t 0x{n['sm_lid']:x}\n"
            f"\tstate:\t\t {'4: ACTIVE' if up else '1: DOWN'}\n"
            f"\tphys state:\t {'5: LinkUp' if up else '2: Polling'}\n"
            f"\trate:\t\t {sysfs.rate_text(st, n) if up else '40 Gb/sec (4X QDR)'}\n"
            f"\tlink_layer:\t {S.link_layer(n)}\n"
        )
    return "\n".join(blocks), "", 0


def ibv_devinfo(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    dev = None
    for i, a in enumerate(argv):
        if a in ("-d", "--ib-dev") and i + 1 < len(argv):
            dev = argv[i + 1]
        elif a.startswith("--ib-dev="):
            dev = a.split("=", 1)[1]
    if "-l" in argv or "--list" in argv:
        return f"{len(st['nics'])} HCAs found:\n" + "".join(f"\t{n['hca']}\n" for n in st["nics"]), "", 0
    nics = [n for n in st["nics"] if dev is None or n["hca"] == dev]
    if not nics:
        return "", f"IB device '{dev}' wasn't found\n", 255
    cn = st["sku"]["compute_nics"]
    blocks = []
    for n in nics:
        up = S.port_up(st, n)
        mtu = active_mtu(st, n)
        blocks.append(
            "\n".join(
                [
                    f"hca_id:\t{n['hca']}",
                    "\ttransport:\t\t\tInfiniBand (0)",
                    f"\tfw_ver:\t\t\t\t{n['fw']}",
                    f"\tnode_guid:\t\t\t{n['node_guid']}",
                    f"\tsys_image_guid:\t\t\t{n['node_guid']}",
                    "\tvendor_id:\t\t\t0x02c9",
                    f"\tvendor_part_id:\t\t\t{cn['part_id'].removeprefix('MT')}",
                    "\thw_ver:\t\t\t\t0x0",
                    f"\tboard_id:\t\t\t{n['board_id']}",
                    "\tphys_port_cnt:\t\t\t1",
                    "\t\tport:\t1",
                    f"\t\t\tstate:\t\t\t{'PORT_ACTIVE (4)' if up else 'PORT_DOWN (1)'}",
                    "\t\t\tmax_mtu:\t\t4096 (5)",
                    f"\t\t\tactive_mtu:\t\t{_mtu_code(mtu)}",
                    f"\t\t\tsm_lid:\t\t\t{n['sm_lid'] if up else 0}",
                    f"\t\t\tport_lid:\t\t{n['lid'] if up else 0}",
                    "\t\t\tport_lmc:\t\t0x00",
                    f"\t\t\tlink_layer:\t\t{S.link_layer(n)}",
                    "",
                ]
            )
        )
    return "\n".join(blocks), "", 0


def ibdev2netdev(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    verbose = "-v" in argv
    out = []
    for n in st["nics"]:
        up = "Up" if netdev_up(st, n) else "Down"
        if verbose:
            state = "ACTIVE" if S.port_up(st, n) else "DOWN"
            out.append(
                f"{n['pci']} {n['hca']} ({st['sku']['compute_nics']['part_id']} - MCX75310AAS-NEAT) "
                f"{st['sku']['compute_nics']['model']} fw {n['fw']} port 1 ({state}) ==> {n['netdev']} ({up})"
            )
        else:
            out.append(f"{n['hca']} port 1 ==> {n['netdev']} ({up})")
    return "\n".join(out) + "\n", "", 0


def show_gids(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    nics = [n for n in st["nics"] if not argv or n["hca"] == argv[0]]
    out = [
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---",
    ]
    found = 0
    for n in nics:
        for i, (gid, typ, ndev) in enumerate(sysfs.gid_table(n)):
            if gid == sysfs.ZERO_GID:
                continue
            ver = "v2" if typ == "RoCE v2" else "v1"
            ipv4 = ""
            if gid.startswith("0000:0000:0000:0000:0000:ffff:"):
                h = gid.replace(":", "")[-8:]
                ipv4 = ".".join(str(int(h[k : k + 2], 16)) for k in range(0, 8, 2))
            cell = f"{ipv4}  \t" if ipv4 else "\t\t"
            out.append(
                f"{n['hca']}\t1\t{i}\t{gid}\t{cell}{ver}\t{ndev}".rstrip("\t")
                if not ndev
                else f"{n['hca']}\t1\t{i}\t{gid}\t{cell}{ver}\t{ndev}"
            )
            found += 1
    out.append(f"n_gids_found={found}")
    return "\n".join(out) + "\n", "", 0


def _rdma_links(st: dict[str, Any], want: str | None) -> list[dict[str, Any]]:
    out = []
    for i, n in enumerate(st["nics"]):
        if want and want not in (n["hca"], f"{n['hca']}/1"):
            continue
        up = S.port_up(st, n)
        rec: dict[str, Any] = {"ifindex": i, "ifname": n["hca"], "port": 1}
        if S.link_layer(n) == "InfiniBand":
            rec |= {
                "subnet_prefix": "fe80:0000:0000:0000",
                "lid": n["lid"] if up else 0,
                "sm_lid": n["sm_lid"] if up else 0,
                "lmc": 0,
            }
        rec |= {
            "state": "ACTIVE" if up else "DOWN",
            "physical_state": "LINK_UP" if up else "POLLING",
            "netdev": n["netdev"],
            "netdev_index": 3 + i,
        }
        out.append(rec)
    return out


def rdma(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    as_json = any(a in ("-j", "-json", "--json") or a.startswith("-j") for a in argv if a.startswith("-"))
    args = [a for a in argv if not a.startswith("-")]
    obj = args[0] if args else ""
    cmd = args[1] if len(args) > 1 else "show"
    if obj in ("link", "l", "li", "lin") and cmd in ("show", "list", "sh", "s"):
        links = _rdma_links(st, args[2] if len(args) > 2 else None)
        if as_json:
            return json.dumps(links) + "\n", "", 0
        out = []
        for rec in links:
            state = f"state {rec['state']} physical_state {rec['physical_state']}"
            if "lid" in rec:
                out.append(
                    f"link {rec['ifname']}/1 subnet_prefix {rec['subnet_prefix']} lid {rec['lid']} "
                    f"sm_lid {rec['sm_lid']} lmc 0 {state} netdev {rec['netdev']} "
                )
            else:
                out.append(f"link {rec['ifname']}/1 {state} netdev {rec['netdev']} ")
        return "\n".join(out) + ("\n" if out else ""), "", 0
    if obj in ("dev", "d", "de") and cmd in ("show", "list", "sh", "s"):
        devs = [
            {
                "ifindex": i,
                "ifname": n["hca"],
                "node_type": "ca",
                "fw": n["fw"],
                "node_guid": n["node_guid"],
                "sys_image_guid": n["node_guid"],
            }
            for i, n in enumerate(st["nics"])
        ]
        if as_json:
            return json.dumps(devs) + "\n", "", 0
        out = [
            f"{d['ifindex']}: {d['ifname']}: node_type ca fw {d['fw']} node_guid {d['node_guid']} "
            f"sys_image_guid {d['sys_image_guid']} "
            for d in devs
        ]
        return "\n".join(out) + "\n", "", 0
    real = REAL_RDMA
    if paths.in_node() and os.path.exists(real):
        os.execv(real, ["rdma", *argv])
    return "", "clusterforge-sim: only 'rdma link' and 'rdma dev' are simulated\n", 1


TOOLS = {
    "ibstat": ibstat,
    "ibstatus": ibstatus,
    "ibv_devinfo": ibv_devinfo,
    "ibdev2netdev": ibdev2netdev,
    "show_gids": show_gids,
    "rdma": rdma,
    "smpquery": smpquery.smpquery,
}


def main(tool: str, argv: list[str]) -> int:
    st = S.load()
    out, err, rc = TOOLS[tool](st, argv)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc
