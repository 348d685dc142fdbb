"""``mlnx_qos`` (trust, PFC, DSCP map, TCs; lost at reboot) and ``mlxconfig`` (firmware settings, pending
until the next boot), rendering the real tools' layouts."""

from __future__ import annotations

import sys
from typing import Any

from . import state as S

# ---- mlnx_qos -------------------------------------------------------------------------------------------


def _csv_ints(value: str, n: int = 8) -> list[int]:
    vals = [int(x) for x in value.split(",")]
    if len(vals) != n:
        raise ValueError(f"expected {n} comma separated values, got {value!r}")
    return vals


def qos_view(st: dict[str, Any], nic: dict[str, Any]) -> dict[str, Any]:
    q = dict(nic["qos"])
    if nic["rail"] in S.targets(st, "pfc-off", "rail", len(st["nics"])):
        q["pfc"] = [0] * 8
    return q


def qos_render(st: dict[str, Any], nic: dict[str, Any]) -> str:
    q = qos_view(st, nic)
    out = [
        f"DCBX mode: {'OS controlled' if q['dcbx'] == 'os' else 'Firmware controlled'}",
        f"Priority trust state: {q['trust']}",
    ]
    if q["trust"] == "dscp":
        out.append("dscp2prio mapping:")
        for prio in range(8):
            dscps = sorted((int(d) for d, p in q["dscp2prio"].items() if p == prio), reverse=True)
            out.append(f"\tprio:{prio} dscp:" + "".join(f"{d:02d}," for d in dscps))
    pfc = q["pfc"]
    p2b = q.get("prio2buffer") or [1 if on else 0 for on in pfc]
    sizes = q.get("buffer_size") or ([130944, 130944, 0, 0, 0, 0, 0, 0] if any(pfc) else [262016] + [0] * 7)
    out += [
        f"Receive buffer size (bytes): {','.join(str(s) for s in sizes)},max_buffer_size=262016",
        f"Cable len: {q['cable_len']}",
        "PFC configuration:",
        "\tpriority    0   1   2   3   4   5   6   7",
        "\tenabled     " + "".join(f"{v}   " for v in pfc),
        "\tbuffer      " + "".join(f"{v}   " for v in p2b),
    ]
    for tc in range(8):
        prios = [p for p in range(8) if q["prio_tc"][p] == tc]
        if not prios:
            continue
        tsa = q["tsa"][tc]
        line = f"tc: {tc} ratelimit: unlimited, tsa: {tsa}"
        if tsa == "ets":
            line += f", bw: {q['tcbw'][tc]}%"
        out.append(line)
        out += [f"\t priority:  {p}" for p in prios]
    return "\n".join(out) + "\n"


def mlnx_qos(argv: list[str]) -> int:
    opts: dict[str, str] = {}
    i = 0
    long = {
        "--interface": "-i",
        "--pfc": "-f",
        "--prio_tc": "-p",
        "--tsa": "-s",
        "--tcbw": "-t",
        "--dcbx": "-d",
        "--ratelimit": "-r",
        "--trust": "--trust",
        "--dscp2prio": "--dscp2prio",
        "--cable_len": "--cable_len",
        "--buffer_size": "--buffer_size",
        "--prio2buffer": "--prio2buffer",
    }
    while i < len(argv):
        a = argv[i]
        key, _, val = a.partition("=")
        key = long.get(key, key)
        if key in ("-a", "-h", "--help"):
            i += 1
            continue
        if not val:
            if i + 1 >= len(argv):
                sys.stderr.write(f"mlnx_qos: error: {a} option requires an argument\n")
                return 2
            val = argv[i + 1]
            i += 1
        opts[key] = val
        i += 1
    iface = opts.pop("-i", None)
    if not iface:
        sys.stderr.write(
            "Usage: mlnx_qos -i <interface> [options]\nmlnx_qos: error: Interface name is required\n"
        )
        return 2
    with S.locked() as st:
        nic = next((n for n in st["nics"] if n["netdev"] == iface), None)
        if nic is None:
            sys.stderr.write(
                f"Netlink error: Operation not supported\nFailed to get DCB information for {iface}\n"
            )
            return 1
        q = nic["qos"]
        try:
            if "--trust" in opts:
                if opts["--trust"] not in ("pcp", "dscp"):
                    raise ValueError("trust must be pcp or dscp")
                q["trust"] = opts["--trust"]
            if "-f" in opts:
                q["pfc"] = [1 if v else 0 for v in _csv_ints(opts["-f"])]
            if "-p" in opts:
                q["prio_tc"] = _csv_ints(opts["-p"])
            if "-s" in opts:
                q["tsa"] = [t.strip() for t in opts["-s"].split(",")]
            if "-t" in opts:
                q["tcbw"] = _csv_ints(opts["-t"])
            if "-d" in opts:
                q["dcbx"] = "os" if opts["-d"] == "os" else "fw"
            if "--cable_len" in opts:
                q["cable_len"] = int(opts["--cable_len"])
            if "--buffer_size" in opts:
                q["buffer_size"] = _csv_ints(opts["--buffer_size"])
            if "--prio2buffer" in opts:
                q["prio2buffer"] = _csv_ints(opts["--prio2buffer"])
            if "--dscp2prio" in opts:
                action, dscp, prio = opts["--dscp2prio"].split(",")
                # the same DSCP APP table `dcb app` shows (mlnx_qos sets it through DCB netlink too)
                app = [e for e in q.setdefault("app", []) if e[0] != int(dscp)]
                if action == "set":
                    q["dscp2prio"][str(int(dscp))] = int(prio)
                    app.append([int(dscp), int(prio)])
                elif action == "del":
                    q["dscp2prio"][str(int(dscp))] = int(dscp) >> 3
                else:
                    raise ValueError("dscp2prio action must be set or del")
                q["app"] = app
        except ValueError as e:
            sys.stderr.write(f"mlnx_qos: error: {e}\n")
            return 2
        text = qos_render(st, nic)
    sys.stdout.write(text)
    return 0


# ---- mlxconfig ------------------------------------------------------------------------------------------

ENUMS: dict[str, dict[int, str]] = {
    "LINK_TYPE_P1": {1: "IB", 2: "ETH", 3: "VPI"},
    "PCI_WR_ORDERING": {0: "per_mkey", 1: "force_relax"},
    "MEMIC_SIZE_LIMIT": {0: "_256KB", 1: "_512KB", 2: "_1MB", 3: "DISABLED"},
    "CQE_COMPRESSION": {0: "BALANCED", 1: "AGGRESSIVE"},
    "PCI_ATOMIC_MODE": {
        0: "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED",
        1: "PCI_ATOMIC_ENABLED_EXT_ATOMIC_DISABLED",
    },
    "ROCE_NEXT_PROTOCOL": {},
}
BOOLS = {
    "SRIOV_EN",
    "KEEP_ETH_LINK_UP_P1",
    "KEEP_IB_LINK_UP_P1",
    "ADVANCED_PCI_SETTINGS",
    "ATS_ENABLED",
    "ADVANCED_POWER_SETTINGS",
    "FLEX_PARSER_PROFILE_ENABLE",
}
_NAMES = {
    "MT4129": (
        "ConnectX7",
        "MCX75310AAS-NEA_Ax",
        "NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE / NDR IB (default mode); Single-port OSFP; "
        "PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled",
    ),
    "MT4123": (
        "ConnectX6",
        "MCX653105A-HDA_Ax",
        "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; single-port QSFP56; "
        "PCIe4.0 x16; tall bracket; ROHS R6",
    ),
}
FLAG_NOTE = "The '*' shows parameters with next value different from default/current value."


def show(name: str, value: int) -> str:
    if name in BOOLS:
        return f"{'True' if value else 'False'}({value})"
    if ENUMS.get(name):
        return f"{ENUMS[name].get(value, 'UNKNOWN')}({value})"
    return str(value)


def parse_value(name: str, text: str) -> int:
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    if name in BOOLS and t.lower() in ("true", "false"):
        return 1 if t.lower() == "true" else 0
    for code, label in ENUMS.get(name, {}).items():
        if label.lower() == t.lower():
            return code
    raise ValueError(f"-E- Failed to set configuration: Bad value {t} for parameter {name}")


def _visible(cfg: dict[str, int]) -> list[str]:
    return [k for k in cfg if k != "PCI_WR_ORDERING" or cfg.get("ADVANCED_PCI_SETTINGS")]


def _header(st: dict[str, Any], nic: dict[str, Any], index: int, dev: str) -> list[str]:
    typ, name, desc = _NAMES.get(st["sku"]["compute_nics"]["part_id"], ("ConnectX7", "N/A", "N/A"))
    return [
        "",
        f"Device #{index}:",
        "----------",
        "",
        f"Device type:        {typ}",
        f"Name:               {name}",
        f"Description:        {desc}",
        f"Device:             {dev}",
        "",
    ]


def query(
    st: dict[str, Any],
    nic: dict[str, Any],
    index: int,
    dev: str,
    extended: bool,
    only: list[str] | None = None,
) -> list[str]:
    mc = nic["mlxconfig"]
    cur: dict[str, int] = mc["current"]
    nxt = {**cur, **(mc.get("pending") or {})}
    default = S.default_mlxconfig(st["sku"]["compute_nics"]["link_layer"])
    out = _header(st, nic, index, dev)
    if extended:
        out.append("Configurations:".ljust(57) + "Default".ljust(16) + "Current".ljust(16) + "Next Boot")
    else:
        out.append("Configurations:".ljust(57) + "Next Boot")
    starred = False
    for k in _visible(nxt):
        if only and k not in only:
            continue
        if extended:
            star = nxt[k] != default.get(k, nxt[k]) or nxt[k] != cur.get(k)
            starred |= star
            out.append(
                ("*" if star else " ")
                + " " * 7
                + k.ljust(44)
                + show(k, default.get(k, nxt[k])).ljust(15)
                + " "
                + show(k, cur.get(k, nxt[k])).ljust(15)
                + " "
                + show(k, nxt[k])
            )
        else:
            out.append(" " * 8 + k.ljust(44) + show(k, nxt[k]))
    if extended and starred:
        out.append(FLAG_NOTE)
    return out


def device_option(argv: list[str]) -> tuple[str | None, list[str]]:
    """MFT's ``-d/--dev DEV`` taken out of ``argv``: (DEV or None, the other arguments in order)."""
    dev, rest, i = None, [], 0
    while i < len(argv):
        if argv[i] in ("-d", "--dev") and i + 1 < len(argv):
            dev = argv[i + 1]
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    return dev, rest


def mlxconfig(argv: list[str]) -> int:
    dev, args = device_option(argv)
    extended = any(a in ("-e", "--enable_verbosity") for a in args)
    yes = any(a in ("-y", "--yes") for a in args)
    rest = [a for a in args if not a.startswith("-")]
    cmd = rest[0].lower() if rest else ""
    if cmd not in ("q", "query", "set", "s", "reset", "r"):
        sys.stderr.write("-E- No command found. For more information please read the help message:\n")
        return 1
    with S.locked() as st:
        if dev is None:
            nics = list(st["nics"])
        else:
            key = dev.rsplit("/", 1)[-1]
            nic = S.nic_by(st, key) or next(
                (n for n in st["nics"] if key.startswith("mt") and key.endswith(f"pciconf{n['rail']}")), None
            )
            if nic is None:
                sys.stderr.write(f"-E- Failed to open device: {dev}. No such file or directory\n")
                return 1
            nics = [nic]
        out: list[str] = []
        if cmd in ("q", "query"):
            for idx, nic in enumerate(nics, 1):
                out += query(st, nic, idx, dev or f"{nic['pci'][5:]}", extended, rest[1:] or None)
            sys.stdout.write("\n".join(out) + "\n")
            return 0
        nic = nics[0]
        mc = nic["mlxconfig"]
        nxt = {**mc["current"], **(mc.get("pending") or {})}
        if cmd in ("reset", "r"):
            changes = S.default_mlxconfig(st["sku"]["compute_nics"]["link_layer"])
        else:
            changes = {}
            try:
                for item in rest[1:]:
                    k, _, v = item.partition("=")
                    if k not in nxt:
                        sys.stderr.write(f"-E- The Device doesn't support {k} parameter\n")
                        return 1
                    changes[k] = parse_value(k, v)
            except ValueError as e:
                sys.stderr.write(f"{e}\n")
                return 1
        out = _header(st, nic, 1, dev or nic["pci"][5:])
        out.append("Configurations:".ljust(57) + "Next Boot".ljust(16) + "New")
        out += [
            " " * 9 + k.ljust(44) + show(k, nxt.get(k, 0)).ljust(15) + " " + show(k, v)
            for k, v in changes.items()
        ]
        out.append("")
        answer = "y" if yes else (sys.stdin.readline().strip() if not sys.stdin.isatty() else "n")
        out.append(f" Apply new Configuration? (y/n) [n] : {answer}")
        if answer.lower() != "y":
            sys.stdout.write("\n".join(out) + "\nAborted!\n")
            return 1
        mc["pending"] = {**(mc.get("pending") or {}), **changes}
        mc["pending"] = {k: v for k, v in mc["pending"].items() if mc["current"].get(k) != v}
        out += ["Applying... Done!", "-I- Please reboot machine to load new configurations."]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


# ---- mlxfwmanager ---------------------------------------------------------------------------------------
# `mlxfwmanager --query [-d DEV]` as MFT prints it (the layout of the real captures in
# tests/fixtures/real/mlxfwmanager__*): one block per device, the running FW version from the simulated
# NIC (what ibstat's "Firmware version" and the driver's log show too), no firmware image bundled, so
# "Available" is N/A and the status "No matching image found". Read-only: burning firmware is not simulated.


def fw_block(st: dict[str, Any], nic: dict[str, Any], index: int, dev: str) -> list[str]:
    typ, part, desc = _NAMES.get(st["sku"]["compute_nics"]["part_id"], ("ConnectX7", "N/A", "N/A"))
    out = [
        "",
        f"Device #{index}:",
        "----------",
        "",
        f"  Device Type:      {typ}",
        f"  Part Number:      {part}",
        f"  Description:      {desc}",
        f"  PSID:             {nic['board_id']}",
        f"  PCI Device Name:  {dev}",
    ]
    if nic.get("node_guid") and st["sku"]["compute_nics"]["link_layer"] == "InfiniBand":
        out.append(f"  Base GUID:        {str(nic['node_guid']).replace(':', '')}")
    out += [
        f"  Base MAC:         {str(nic['mac']).replace(':', '')}",
        "  Versions:         Current        Available",
        f"     FW             {nic['fw']:<15}N/A",
        "",
        "  Status:           No matching image found",
    ]
    return out


def mlxfwmanager(argv: list[str]) -> int:
    dev, args = device_option(argv)
    bad = [a for a in args if a.startswith("-") and a not in ("--query", "--yes", "-y")]
    if bad:
        sys.stderr.write(f"-E- Unsupported option by the clusterforge lab's mlxfwmanager: {bad[0]}\n")
        return 1
    if "--query" not in args:
        sys.stderr.write("-E- only --query is simulated (no firmware images in the lab)\n")
        return 1
    st = S.load()
    if dev is None:
        nics = [(n, n["pci"]) for n in st["nics"]]
    else:
        nic = S.nic_by(st, dev.rsplit("/", 1)[-1])
        if nic is None:
            sys.stderr.write(f"-E- Failed to open device: {dev}. No such device\n")
            return 1
        nics = [(nic, dev)]
    out = ["Querying Mellanox devices firmware ..."]
    for idx, (nic, name) in enumerate(nics, 1):
        out += fw_block(st, nic, idx, name)
    sys.stdout.write("\n".join(out) + "\n")
    return 0
