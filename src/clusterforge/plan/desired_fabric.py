"""The fabric part of a node's desired state: what lldpd advertises on, and what each rail must be cabled to.

`lldp_desired` is a function of the SKU's rails (the `lldp` key of the compiled desired state, shared by
every node of the SKU, applied by the lldpd role). `rail_neighbours` is per node: the switch and switch port
at the far end of each rail, read from plan.json: the plan compiles each rail's leaf port name and cable ID
(`node_cable_ids` here, the switch model's port naming) with the same naming and numbering as the cabling
sheet (`plan/cabling.py`), so the per-node validator and `clusterforge fabric check` compare against the
same cables (a unit test keeps them equal), and a validator needs no switch catalog.

Pure; plain JSON types; standard library only (the validators import it, on nodes too).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

# lldpd: port ID = the interface name (lldpd's default is the MAC address unless the port has an alias),
# so a switch's LLDP table names the node's rail netdev; TTL = tx-interval x tx-hold (lldpcli(8)).
PORT_ID_SUBTYPE = "ifname"
TX_INTERVAL_S = 30
TX_HOLD = 4


def nth_netdev(base: str, i: int) -> str:
    """NIC i of a SKU's NIC group named by its first netdev: stor0 -> stor1, eth -> eth1 (i > 0)."""
    if i == 0:
        return base
    digits = len(base) - len(base.rstrip("0123456789"))
    if digits:
        return f"{base[:-digits]}{int(base[-digits:]) + i}"
    return f"{base}{i}"


def storage_netdevs(sku: dict[str, Any]) -> list[str]:
    nics = sku.get("storage_nics") or {}
    return [nth_netdev(str(nics["netdev"]), i) for i in range(int(nics.get("count", 0)))] if nics else []


def lldp_desired(sku: dict[str, Any], rails: list[dict[str, Any]]) -> dict[str, Any]:
    """lldpd's settings for a node of ``sku``: it runs on the Ethernet rails and the storage NICs (the
    InfiniBand rails carry no LLDP: their neighbours come from the subnet's node descriptions)."""
    ordered = sorted(rails, key=lambda r: int(r["index"]))
    eth = [str(r["netdev"]) for r in ordered if r["link_layer"] == "Ethernet"]
    ib = [str(r["netdev"]) for r in ordered if r["link_layer"] != "Ethernet"]
    storage = storage_netdevs(sku)
    return {
        "enabled": bool(eth or storage),
        "interfaces": eth + [s for s in storage if s not in eth],
        "rail_interfaces": eth,
        "ib_rails": ib,
        "port_id_subtype": PORT_ID_SUBTYPE,
        "tx_interval_s": TX_INTERVAL_S,
        "tx_hold": TX_HOLD,
    }


def node_cable_ids(fabric_name: str, links: Iterable[Sequence[Any]]) -> dict[tuple[str, int], str]:
    """(node, rail) -> cable ID of every node-leaf cable of a fabric (the sheet's `<fabric>-nl-<seq>`
    numbering, in the fabric's link order); ``links`` are the plan's `[kind, a_dev, a_port, ...]` rows."""
    node_leaf = [link for link in links if link[0] == "node-leaf"]
    width = max(4, len(str(len(node_leaf))))
    return {
        (str(link[1]), int(link[2])): f"{fabric_name}-nl-{seq:0{width}d}"
        for seq, link in enumerate(node_leaf, 1)
    }


def rail_neighbours(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Per rail of plan.json ``node`` (rail order): its netdev and HCA, and the switch, switch port (number
    and name in the switch OS's naming) and cable ID at its far end, as the plan compiled them into the
    node's rails (`leaf`, `leaf_port`, `leaf_port_name`, `cable_id`: plan/build.py, with the cabling sheet's
    port naming and cable numbering). KeyError when a rail lacks them (a plan compiled before they were)."""
    out = []
    for r in sorted(node["rails"], key=lambda r: int(r["index"])):
        out.append(
            {
                "rail": int(r["index"]),
                "netdev": str(r["netdev"]),
                "hca": str(r["hca"]),
                "link_layer": str(r["link_layer"]),
                "switch": str(r["leaf"]),
                "switch_port": int(r["leaf_port"]),
                "switch_port_name": str(r["leaf_port_name"]),
                "cable_id": str(r["cable_id"]),
            }
        )
    return out


def fabric_entry(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The plan.json ``fabrics`` entry called ``name`` (None when the plan has none)."""
    return next((f for f in doc.get("fabrics") or [] if f.get("name") == name), None)
