"""The lab's leaf switches as LLDP speakers: real LLDPDUs (IEEE 802.1AB) sent on each node rail's host-side
veth end, so the node's own lldpd hears the switch and port its rail is attached to.

Which switch a rail is attached to comes from the lab's real wiring: the rail bridge the host end is a port
of (`ip -j link show` master). Bridge `cfbr-<fabric>-<r>` stands for the planned leaf of each node's rail
`r`, at the port the plan gives that node's rail `r` (plan/desired_fabric.rail_neighbours: the names
`cables.csv` and the cabling check use). Moving a node's rail-0 host end onto the rail-1 bridge therefore
makes the node hear rail 1's leaf and port on rail 0 - a miscabling, as on hardware. `swaps` crosses two
host ends' far ends without touching the wiring (for tests that cannot re-attach links).

When what a host end should announce changes, a shutdown LLDPDU (TTL 0) for the old identity goes first,
so the node's lldpd drops the old neighbour at once instead of after its TTL (802.1AB 9.2.7.7.2).

The frame builder and decoder are pure (tests/unit/lab/test_lldp_emulator.py checks them byte for byte
against the TLV layout, and decodes a real switch frame); sending needs CAP_NET_RAW (root on the host).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clusterforge.lab import net
from clusterforge.lab.labplan import LabPlan, load
from clusterforge.plan.desired_fabric import fabric_entry, rail_neighbours

LLDP_MULTICAST = bytes.fromhex("0180c200000e")  # nearest bridge: never forwarded by a bridge
ETHERTYPE_LLDP = 0x88CC
MIN_FRAME = 60  # Ethernet minimum without the FCS: shorter frames are padded with zeros
# TLV types (802.1AB-2016 Table 8-1)
END, CHASSIS_ID, PORT_ID, TTL, PORT_DESCRIPTION, SYSTEM_NAME = 0, 1, 2, 3, 4, 5
# Chassis ID subtype 4 = MAC address (Table 8-2); Port ID subtype 5 = interface name (Table 8-3)
CHASSIS_MAC, PORT_IFNAME = 4, 5
INTERVAL_S = 5  # the lab's msgTxInterval: a re-cabling shows within seconds
TTL_S = 4 * INTERVAL_S  # msgTxHold 4


# --- frames (pure) -------------------------------------------------------------------------------------


def tlv(kind: int, value: bytes) -> bytes:
    """One TLV: 7-bit type and 9-bit length in two octets, big-endian, then the value."""
    if not 0 <= kind <= 127:
        raise ValueError(f"TLV type {kind} is not 0..127")
    if len(value) > 511:
        raise ValueError(f"TLV value of {len(value)} octets: at most 511")
    return struct.pack("!H", (kind << 9) | len(value)) + value


def _string(what: str, text: str, lo: int, hi: int) -> bytes:
    b = text.encode("utf-8")
    if not lo <= len(b) <= hi:
        raise ValueError(f"{what} of {len(b)} octets: {lo}..{hi} allowed")
    return b


def mac_bytes(mac: str) -> bytes:
    b = bytes.fromhex(mac.replace(":", "").replace("-", ""))
    if len(b) != 6:
        raise ValueError(f"not a MAC address: {mac!r}")
    return b


def lldpdu(
    chassis_mac: str, port_id: str, ttl: int, system_name: str = "", port_description: str = ""
) -> bytes:
    """Chassis ID (MAC), Port ID (interface name), TTL, then Port Description and System Name when given,
    then End. A shutdown LLDPDU is ``ttl=0`` without the optional TLVs."""
    if not 0 <= ttl <= 65535:
        raise ValueError(f"TTL {ttl} is not 0..65535")
    out = tlv(CHASSIS_ID, bytes([CHASSIS_MAC]) + mac_bytes(chassis_mac))
    out += tlv(PORT_ID, bytes([PORT_IFNAME]) + _string("port ID", port_id, 1, 255))
    out += tlv(TTL, struct.pack("!H", ttl))
    if port_description:
        out += tlv(PORT_DESCRIPTION, _string("port description", port_description, 1, 255))
    if system_name:
        out += tlv(SYSTEM_NAME, _string("system name", system_name, 1, 255))
    return out + tlv(END, b"")


def frame(src_mac: str, pdu: bytes) -> bytes:
    """An Ethernet II frame to the nearest-bridge group address, padded to 60 octets."""
    out = LLDP_MULTICAST + mac_bytes(src_mac) + struct.pack("!H", ETHERTYPE_LLDP) + pdu
    return out + bytes(max(0, MIN_FRAME - len(out)))


@dataclass(frozen=True)
class Decoded:
    dst: str
    src: str
    tlvs: tuple[tuple[int, bytes], ...]  # up to and without End

    def first(self, kind: int) -> bytes | None:
        return next((v for k, v in self.tlvs if k == kind), None)

    @property
    def chassis(self) -> tuple[int, bytes]:
        v = self.first(CHASSIS_ID) or b"\0"
        return v[0], v[1:]

    @property
    def port(self) -> tuple[int, bytes]:
        v = self.first(PORT_ID) or b"\0"
        return v[0], v[1:]

    @property
    def ttl(self) -> int:
        v = self.first(TTL)
        return struct.unpack("!H", v)[0] if v and len(v) == 2 else -1

    def text(self, kind: int) -> str:
        v = self.first(kind)
        return "" if v is None else v.decode("utf-8", errors="replace")


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def decode(data: bytes) -> Decoded:
    """An LLDP Ethernet frame's TLVs; ValueError when it is not one or a TLV overruns the frame. The first
    three TLVs must be Chassis ID, Port ID and TTL (802.1AB 8.2), and an End TLV must close the LLDPDU."""
    if len(data) < 14 or struct.unpack("!H", data[12:14])[0] != ETHERTYPE_LLDP:
        raise ValueError("not an LLDP frame (ethertype 0x88cc)")
    i, tlvs = 14, []
    while True:
        if i + 2 > len(data):
            raise ValueError(f"LLDPDU ends at octet {i} without an End TLV")
        (head,) = struct.unpack("!H", data[i : i + 2])
        kind, length = head >> 9, head & 0x1FF
        if i + 2 + length > len(data):
            raise ValueError(f"TLV type {kind} at octet {i} overruns the frame")
        if kind == END:
            break
        tlvs.append((kind, data[i + 2 : i + 2 + length]))
        i += 2 + length
    if [k for k, _ in tlvs[:3]] != [CHASSIS_ID, PORT_ID, TTL]:
        raise ValueError("an LLDPDU starts with Chassis ID, Port ID and TTL")
    return Decoded(_mac(data[0:6]), _mac(data[6:12]), tuple(tlvs))


def parse_hexdump(text: str) -> bytes:
    """The bytes of a ``tcpdump -xx`` style dump (``0x0000:  0180 c200 ...  ascii``)."""
    out = bytearray()
    for line in text.splitlines():
        head, sep, rest = line.strip().partition(":  ")
        if not sep or not head.startswith("0x"):
            continue
        groups = rest.split("  ", 1)[0].split()
        out += bytes.fromhex("".join(groups))
    return bytes(out)


# --- what each host end announces (pure) ---------------------------------------------------------------


def switch_mac(name: str) -> str:
    """A stable, locally administered MAC per switch name (the chassis ID the emulated leaf sends)."""
    h = hashlib.sha256(f"clusterforge-lab-switch/{name}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h[:5])


@dataclass(frozen=True)
class Announcement:
    host_link: str
    node: str
    rail: int  # the node rail the host end belongs to
    bridge: str  # the bridge it is a port of now ("" = none: nothing is sent)
    switch: str
    port: str

    def pdu(self, ttl: int = TTL_S) -> bytes:
        if ttl == 0:
            return lldpdu(switch_mac(self.switch), self.port, 0)
        return lldpdu(switch_mac(self.switch), self.port, ttl, self.switch, self.port)


def announcements(
    plan: LabPlan,
    masters: Mapping[str, str | None] | None = None,
    swaps: Iterable[tuple[tuple[str, int], tuple[str, int]]] = (),
) -> list[Announcement]:
    """Per node rail host end: the switch and port it reaches through the bridge it is attached to
    (``masters``: host end -> bridge; None = as the lab wires it), then with the far ends of each
    ``((node, rail), (node, rail))`` pair crossed. A host end on no rail bridge announces nothing; only
    RoCE fabrics speak LLDP (InfiniBand rails are emulated by the simulated IB tools)."""
    ends: dict[tuple[str, str], tuple[str, str]] = {}  # (node, bridge) -> (switch, port)
    roce = [n for n in plan.nodes if n.fabric_type == "roce"]
    for n in roce:
        fabric = fabric_entry(plan.raw, n.fabric)
        if fabric is None or not n.rails:
            continue
        planned = {int(w["rail"]): w for w in rail_neighbours(n.raw, fabric)}
        for r in n.rails:
            w = planned[r.index]
            ends[(n.name, r.bridge)] = (str(w["switch"]), str(w["switch_port_name"]))
    out: list[Announcement] = []
    for n in roce:
        for r in n.rails:
            bridge = r.bridge if masters is None else (masters.get(r.host_link) or "")
            sw, port = ends.get((n.name, bridge), ("", ""))
            out.append(Announcement(r.host_link, n.name, r.index, bridge if sw else "", sw, port))
    index = {(a.node, a.rail): i for i, a in enumerate(out)}
    for x, y in swaps:
        if x not in index or y not in index:
            raise ValueError(f"no such node rail to swap: {x if x not in index else y}")
        i, j = index[x], index[y]
        a, b = out[i], out[j]
        out[i] = Announcement(a.host_link, a.node, a.rail, b.bridge, b.switch, b.port)
        out[j] = Announcement(b.host_link, b.node, b.rail, a.bridge, a.switch, a.port)
    return out


def masters_from_ip_json(text: str) -> dict[str, str | None]:
    """Link name -> its master (bridge) from ``ip -j link show``."""
    return {d["ifname"]: d.get("master") for d in json.loads(text or "[]")}


def host_mac(a: Announcement) -> str:
    """The source MAC of the emulated switch port (stable per switch and port)."""
    h = hashlib.sha256(f"clusterforge-lab-port/{a.switch}/{a.port}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h[:5])


# --- sending (needs CAP_NET_RAW) ------------------------------------------------------------------------


def send(ifname: str, data: bytes) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((ifname, 0))
        s.send(data)


class Emulator:
    """Sends every host end's LLDPDU each interval; a changed attachment is first withdrawn (TTL 0)."""

    def __init__(self, plan: LabPlan, swaps: Iterable[tuple[tuple[str, int], tuple[str, int]]] = ()) -> None:
        self.plan = plan
        self.swaps = list(swaps)
        self.sent: dict[str, Announcement] = {}

    def tick(self) -> list[Announcement]:
        masters = masters_from_ip_json(net.ip("-j", "link", "show").stdout)
        now = announcements(self.plan, masters, self.swaps)
        for a in now:
            old = self.sent.get(a.host_link)
            if old is not None and old.switch and (old.switch, old.port) != (a.switch, a.port):
                send(a.host_link, frame(host_mac(old), old.pdu(ttl=0)))
            if a.switch:
                send(a.host_link, frame(host_mac(a), a.pdu()))
            self.sent[a.host_link] = a
        return now

    def stop(self) -> None:
        for a in self.sent.values():
            if a.switch:
                with contextlib.suppress(OSError):  # the link is gone with its node
                    send(a.host_link, frame(host_mac(a), a.pdu(ttl=0)))
        self.sent.clear()

    def run(self, interval: float = INTERVAL_S) -> None:
        try:
            while True:
                self.tick()
                time.sleep(interval)
        finally:
            self.stop()


def _pair(text: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """``node:rail,node:rail`` -> ((node, rail), (node, rail))."""
    a, _, b = text.partition(",")
    na, _, ra = a.rpartition(":")
    nb, _, rb = b.rpartition(":")
    return (na, int(ra)), (nb, int(rb))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m clusterforge.lab.lldp_emulator", description=__doc__)
    p.add_argument("plan", help="plan.json of the lab")
    p.add_argument("--swap", action="append", default=[], type=_pair, help="cross node:rail,node:rail")
    p.add_argument("--interval", type=float, default=INTERVAL_S)
    p.add_argument("--once", action="store_true", help="send one round and exit")
    a = p.parse_args(argv)
    em = Emulator(load(a.plan), a.swap)
    if a.once:
        for x in em.tick():
            print(f"{x.host_link} ({x.node} rail {x.rail}) <- {x.switch or '-'} {x.port}")
        return 0
    em.run(a.interval)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
