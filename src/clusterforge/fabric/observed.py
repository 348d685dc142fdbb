"""Observed links from parsed discovery output, keyed like the plan's (`fabric.model.End`).

InfiniBand names come from node descriptions: an HCA's is ``<hostname> <hca>`` (rdma-core's default with
mlx5, "gpu-0001 mlx5_0"), a switch's is its name, optionally in the ``MF0;<name>:<model>/U1`` form
Mellanox/NVIDIA switches use. SHARP aggregation nodes (a CA inside the switch on its last port) are not
cables and are dropped. LLDP names are the neighbour's system name (a domain suffix is dropped when the
short name is a planned device) and its port ID or description.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clusterforge.fabric.model import End, ObservedLink
from clusterforge.hw import iblinkinfo, ibnetdiscover, lldp

#: nominal per-lane data rate of each InfiniBand speed (4x NDR = 400 Gb/s as plans and SKUs say it)
LANE_GBPS = {
    "SDR": 2.5,
    "DDR": 5,
    "QDR": 10,
    "FDR10": 10,
    "FDR": 14,
    "EDR": 25,
    "HDR": 50,
    "NDR": 100,
    "XDR": 200,
}
#: iblinkinfo prints the lane signalling rate; the speed it stands for
SIGNAL_SPEED = {
    2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 10.3125: "FDR10", 14.0625: "FDR",
    25.78125: "EDR", 53.125: "HDR", 106.25: "NDR", 212.5: "XDR",
}  # fmt: skip
AGGREGATION_NODE = "Mellanox Technologies Aggregation Node"
_MF0 = re.compile(r"^MF0;([^:]+):")


def switch_name(description: str) -> str:
    m = _MF0.match(description)
    return m.group(1) if m else description.strip()


def switch_guids(topo: ibnetdiscover.Topology) -> dict[str, str]:
    """Switch name (as `switch_name` reads its description) -> node GUID, of every switch of the view."""
    return {switch_name(n.description): n.guid for n in topo.nodes if n.kind == "switch"}


def ca_end(description: str, fallback: str) -> End:
    """``"gpu-0001 mlx5_0"`` -> End("gpu-0001", "mlx5_0"); an HCA without such a description keeps its
    GUID as the device name, so that it shows as an unexpected device."""
    parts = description.split()
    if len(parts) == 2:
        return End(parts[0], parts[1])
    return End(f"unnamed HCA {fallback} ({description.strip()})", "1")


def _rate(width: str, speed: str) -> float | None:
    lanes = int(width.rstrip("xX") or 0)
    return lanes * LANE_GBPS[speed] if speed in LANE_GBPS and lanes else None


def from_ibnetdiscover(topo: ibnetdiscover.Topology, source: str) -> list[ObservedLink]:
    nodes = topo.by_guid()
    out: list[ObservedLink] = []

    def end(guid: str, port: int) -> End | None:
        n = nodes[guid]
        if n.kind == "switch":
            return End(switch_name(n.description), str(port))
        if n.description.strip() == AGGREGATION_NODE:
            return None
        return ca_end(n.description, guid)

    for lk in topo.links:
        a, b = end(lk.a_guid, lk.a_port), end(lk.b_guid, lk.b_port)
        if a is not None and b is not None:
            out.append(ObservedLink(a, b, _rate(lk.width, lk.speed), lk.width.lower(), source))
    return out


def from_iblinkinfo(nodes: Iterable[iblinkinfo.Node], source: str) -> list[ObservedLink]:
    """Links from switch blocks (every cable has a switch end in a fat tree) and from CA blocks."""
    out: list[ObservedLink] = []
    for n in nodes:
        for p in n.ports:
            if p.state != "Active" or p.peer_port is None:
                continue
            if n.kind == "switch":
                mine = End(switch_name(n.description), str(p.port))
            elif n.description.strip() == AGGREGATION_NODE:
                continue
            else:
                mine = ca_end(n.description, n.guid)
            if p.peer.strip() == AGGREGATION_NODE:
                continue
            peer = (
                ca_end(p.peer, f"lid {p.peer_lid}")
                if _looks_ca(p.peer)
                else End(switch_name(p.peer), str(p.peer_port))
            )
            speed = SIGNAL_SPEED.get(p.lane_gbps or 0.0, "")
            out.append(ObservedLink(mine, peer, _rate(p.width, speed), p.width.lower(), source))
    return out


def _looks_ca(description: str) -> bool:
    parts = description.split()
    return len(parts) == 2 and not description.startswith("MF0;")


def from_lldp(
    node: str, neighbours: Iterable[lldp.Neighbor], known: set[str], source: str
) -> list[ObservedLink]:
    out: list[ObservedLink] = []
    for n in neighbours:
        name = n.sysname or n.chassis_id
        short = name.split(".", 1)[0]
        if name not in known and short in known:
            name = short
        out.append(ObservedLink(End(node, n.interface), End(name, n.port), None, "", source))
    return out
