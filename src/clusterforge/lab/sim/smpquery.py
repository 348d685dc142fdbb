"""``smpquery`` (infiniband-diags) for the per-node cabling check: ``-C <hca> -P <port> -D nodedesc|portinfo
0,1``, the far end of a rail's cable read by a directed-route SMP through port 1.

Print format and failures as rdma-core's infiniband-diags/smpquery.c and libibmad print them
(rdma-core 691953d8): a field is ``<Name>:`` padded with dots to column 33 (libibmad _mad_dump_field);
NodeDesc pads by the length of the description instead (smpquery.c node_desc: 32 - strlen, at least one
dot); ``iberror: failed: ...`` goes to stdout with exit(-1) = 255 (ibdiag_common.c ibexit); a timed-out
MAD warns ``ibwarn: [pid] mad_rpc: _do_madrpc failed; dport (...)`` on stderr; a bad option prints the
usage on stderr and exits 2 (ibdiag_show_usage).
"""

from __future__ import annotations

import os
from typing import Any

from . import state as S

PROG = "smpquery"
OPS = {  # smpquery.c match_tbl: name, alias (case insensitive)
    "nodeinfo": "ni", "nodedesc": "nd", "portinfo": "pi", "portinfoextended": "pie", "switchinfo": "si",
    "pkeytable": "pkeys", "sl2vltable": "sl2vl", "vlarbitration": "vlarb", "guidinfo": "gi",
    "mlnxextportinfo": "mepi",
}  # fmt: skip
_ARG_OPTS = {"-C": "ca", "--Ca": "ca", "-P": "port", "--Port": "port"}
_FLAG_OPTS = {"-D": "direct", "--Direct": "direct"}
USAGE = (
    "\nUsage: smpquery [options] <op> <dest dr_path|lid|guid> [op params]\n\n"
    "Supported ops (and aliases, case insensitive):\n"
    "  NodeInfo (NI) <addr>\n  NodeDesc (ND) <addr>\n  PortInfo (PI) <addr> [<portnum>]\n"
    "  PortInfoExtended (PIE) <addr> [<portnum>]\n  SwitchInfo (SI) <addr>\n"
    "  PKeyTable (PKeys) <addr> [<portnum>]\n  SL2VLTable (SL2VL) <addr> [<portnum>]\n"
    "  VLArbitration (VLArb) <addr> [<portnum>]\n  GUIDInfo (GI) <addr>\n"
    "  MlnxExtPortInfo (MEPI) <addr> [<portnum>]\n\n"
)


def field(name: str, value: object) -> str:
    """libibmad's ``Name:.....value`` (name and dots fill 32 columns)."""
    return f"{name}:{'.' * max(0, 32 - len(name))}{value}\n"


def _fail(msg: str, warn: str = "") -> tuple[str, str, int]:
    return f"{PROG}: iberror: failed: {msg}\n", warn, 255


def _usage(bad: str) -> tuple[str, str, int]:
    what = f"unrecognized option '{bad}'" if bad.startswith("--") else f"invalid option -- '{bad[1:2]}'"
    return "", f"{PROG}: {what}\n{USAGE}", 2


def _portinfo(head: str, end: dict[str, Any], rate_gbps: int) -> str:
    """PortInfo of the far switch's port 0 (management port) as the SMP sees it: LocalPort is the port
    the SMP entered the switch by, i.e. where the node's cable lands."""
    speed = {400: "106.25 Gbps", 200: "53.125 Gbps"}.get(rate_gbps, "0")
    rows = [
        ("Mkey", "<not displayed>"), ("GidPrefix", "0xfe80000000000000"), ("Lid", end.get("lid", 1)),
        ("SMLid", 1), ("CapMask", "0x42500848"), ("DiagCode", "0x0000"), ("MkeyLeasePeriod", 0),
        ("LocalPort", end["port"]), ("LinkWidthEnabled", "1X or 4X"), ("LinkWidthSupported", "1X or 4X"),
        ("LinkWidthActive", "4X"), ("LinkSpeedSupported", "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"),
        ("LinkState", "Active"), ("PhysLinkState", "LinkUp"), ("LinkDownDefState", "Polling"),
        ("ProtectBits", 0), ("LMC", 0), ("LinkSpeedActive", "Extended speed"),
        ("LinkSpeedEnabled", "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"), ("NeighborMTU", 4096), ("SMSL", 0),
        ("VLCap", "VL0-7"), ("InitType", "0x00"), ("VLHighLimit", 4), ("VLArbHighCap", 8),
        ("VLArbLowCap", 8), ("InitReply", "0x00"), ("MtuCap", 4096), ("VLStallCount", 7), ("HoqLife", 21),
        ("OperVLs", "VL0-7"), ("PartEnforceInb", 0), ("PartEnforceOutb", 0), ("FilterRawInb", 0),
        ("FilterRawOutb", 0), ("MkeyViolations", 0), ("PkeyViolations", 0), ("QkeyViolations", 0),
        ("GuidCap", 1), ("ClientReregister", 0), ("McastPkeyTrapSuppressionEnabled", 0),
        ("SubnetTimeout", 18), ("RespTimeVal", 20), ("LocalPhysErr", 8), ("OverrunErr", 8),
        ("MaxCreditHint", 0), ("RoundTrip", 0), ("CapabilityMask2", "0x0000"),
        ("LinkSpeedExtActive", speed), ("LinkSpeedExtSupported", "14.0625 Gbps or 25.78125 Gbps or "
         "53.125 Gbps or 106.25 Gbps"), ("LinkSpeedExtEnabled", "14.0625 Gbps or 25.78125 Gbps or "
         "53.125 Gbps or 106.25 Gbps"),
    ]  # fmt: skip
    return head + "".join(field(k, v) for k, v in rows)


def smpquery(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    opts: dict[str, str] = {}
    args: list[str] = []
    it = iter(argv)
    for a in it:
        if a in _ARG_OPTS:
            val = next(it, None)
            if val is None:
                return "", f"{PROG}: option requires an argument -- '{a.lstrip('-')[:1]}'\n{USAGE}", 2
            opts[_ARG_OPTS[a]] = val
        elif a in _FLAG_OPTS:
            opts[_FLAG_OPTS[a]] = "1"
        elif a.startswith("-") and len(a) > 1:
            return _usage(a)
        else:
            args.append(a)
    if len(args) < 2:
        return "", USAGE, 2
    op = next((k for k, alias in OPS.items() if args[0].lower() in (k, alias)), None)
    if op is None:
        return _fail(f"operation '{args[0]}' not supported")
    ca = opts.get("ca")
    nic = S.nic_by(st, ca) if ca else (st["nics"][0] if st["nics"] else None)
    port = opts.get("port", "1")
    if nic is None or nic["hca"] != (ca or nic["hca"]) or port not in ("0", "1"):
        return _fail(f"Failed to open '{ca or ''}' port '{int(port) if port.isdigit() else 0}'")
    if S.link_layer(nic) != "InfiniBand":  # no subnet management QP on a RoCE port
        return _fail(f"Failed to open '{nic['hca']}' port '1'")
    if "direct" not in opts or op not in ("nodedesc", "portinfo") or args[1] != "0,1":
        return "", f"{PROG}: clusterforge-sim simulates only -D nodedesc|portinfo 0,1\n", 1
    route = "DR path slid 65535; dlid 65535; 0,1"
    end = S.far_end(st, nic)
    if not S.port_up(st, nic) or end is None:
        warn = f"ibwarn: [{os.getpid()}] mad_rpc: _do_madrpc failed; dport ({route})\n"
        return _fail(
            f"operation {args[0]}: {'node info' if op == 'nodedesc' else 'port info'} query failed", warn
        )
    if op == "nodedesc":
        desc = str(end["description"])[:64]
        dots = "." * (32 - len(desc)) if len(desc) < 32 else "."
        return f"Node Description:{dots}{desc}\n", "", 0
    portnum = int(args[2]) if len(args) > 2 and args[2].isdigit() else 0
    return _portinfo(f"# Port info: {route} port {portnum}\n", end, S.port_rate(st, nic)), "", 0
