"""Render wiring in the discovery tools' own formats: an `ibnetdiscover` topology file for an InfiniBand
subnet, `lldpcli -f json0` for one device. For the lab's simulated discovery tools and for synthetic
discoveries (bench/, tests); the layouts follow the real captures in tests/fixtures/real/. GUIDs are
derived from names (stable, not real)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import NamedTuple

from clusterforge.fabric.model import End


class Wire(NamedTuple):
    """A cable as built: `a` is a node's HCA/netdev when `a_is_node`, else a switch port; `b` a switch
    port."""

    a: End
    b: End
    a_is_node: bool
    width: str = "4x"
    speed: str = "NDR"


def guid(name: str) -> str:
    return "e09d73" + hashlib.sha256(name.encode()).hexdigest()[:10]


def ibnetdiscover_text(wires: Iterable[Wire], radix: int = 64) -> str:
    sw_ports: dict[str, dict[int, tuple[str, int, str, str]]] = {}
    cas: dict[tuple[str, str], tuple[str, int, str]] = {}
    lids: dict[str, int] = {}

    def lid(key: str) -> int:
        return lids.setdefault(key, len(lids) + 1)

    for w in wires:
        rate = f"{w.width}{w.speed}"
        bp = int(w.b.port)
        if w.a_is_node:
            desc = f"{w.a.device} {w.a.port}"
            g = guid(desc)
            cas[(w.a.device, w.a.port)] = (w.b.device, bp, rate)
            sw_ports.setdefault(w.b.device, {})[bp] = (f"H-{g}", 1, desc, rate)
            lid(desc)
        else:
            ap = int(w.a.port)
            sw_ports.setdefault(w.a.device, {})[ap] = (f"S-{guid(w.b.device)}", bp, w.b.device, rate)
            sw_ports.setdefault(w.b.device, {})[bp] = (f"S-{guid(w.a.device)}", ap, w.a.device, rate)
        lid(w.b.device)
    out = ["#", "# Topology file: rendered by clusterforge from the plan's wiring", "#", ""]
    for sw in sorted(sw_ports):
        g = guid(sw)
        out += ["vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{g}", f"switchguid=0x{g}({g})"]
        out.append(
            f'Switch\t{radix + 1} "S-{g}"\t\t# "MF0;{sw}:MQM9700/U1" enhanced port 0 lid {lid(sw)} lmc 0'
        )
        for port, (peer, pport, pdesc, rate) in sorted(sw_ports[sw].items()):
            pg = peer[2:]
            tail = f"({pg}) " if peer.startswith("H-") else ""
            shown = pdesc if peer.startswith("H-") else f"MF0;{pdesc}:MQM9700/U1"
            out.append(f'[{port}]\t"{peer}"[{pport}]{tail}\t\t# "{shown}" lid {lid(pdesc)} {rate}')
        out.append("")
    for (node, hca), (sw, port, rate) in sorted(cas.items()):
        desc = f"{node} {hca}"
        g = guid(desc)
        out += ["vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{g}", f"caguid=0x{g}"]
        out.append(f'Ca\t1 "H-{g}"\t\t# "{desc}"')
        out.append(
            f'[1]({g}) \t"S-{guid(sw)}"[{port}]\t\t# lid {lid(desc)} lmc 0 '
            f'"MF0;{sw}:MQM9700/U1" lid {lid(sw)} {rate}'
        )
        out.append("")
    return "\n".join(out)


def lldp_json0(neighbours: Iterable[tuple[str, str, str]]) -> str:
    """(local interface, neighbour system name, neighbour port name) -> `lldpcli -f json0 show neighbors`."""
    interfaces = [
        {
            "name": iface,
            "via": "LLDP",
            "rid": str(i + 1),
            "age": "0 day, 00:10:00",
            "chassis": [
                {"id": [{"type": "mac", "value": "02:00:00:00:00:00"}], "name": [{"value": sysname}]}
            ],
            "port": [
                {
                    "id": [{"type": "ifname", "value": port}],
                    "descr": [{"value": port}],
                    "ttl": [{"value": "120"}],
                }
            ],
        }
        for i, (iface, sysname, port) in enumerate(neighbours)
    ]
    return json.dumps({"lldp": [{"interface": interfaces}]}, indent=2) + "\n"
