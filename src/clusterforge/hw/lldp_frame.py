"""LLDP frames (IEEE 802.1AB): the TLV encoder the lab's leaf emulator sends with, and a decoder for captured
frames (a ``tcpdump -xx`` hex dump, `parse_tcpdump`). Pure.

TLV: a 7-bit type and a 9-bit length in two octets (big-endian), then the value; an LLDPDU is Chassis ID,
Port ID and TTL, optional TLVs, then End (type 0, length 0), carried in an Ethernet II frame with
ethertype 0x88cc to the nearest-bridge group address 01:80:c2:00:00:0e.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ._common import require_text
from .errors import ParseError

TOOL = "lldp frame"
LLDP_MULTICAST = bytes.fromhex("0180c200000e")  # nearest bridge: never forwarded by a bridge
ETHERTYPE_LLDP = 0x88CC
MIN_FRAME = 60  # Ethernet minimum without the FCS: shorter frames are padded with zeros
# TLV types (802.1AB-2016 Table 8-1)
END, CHASSIS_ID, PORT_ID, TTL, PORT_DESCRIPTION, SYSTEM_NAME = 0, 1, 2, 3, 4, 5
# Chassis ID subtype 4 = MAC address (Table 8-2); Port ID subtype 5 = interface name (Table 8-3)
CHASSIS_MAC, PORT_IFNAME = 4, 5


# --- frames -------------------------------------------------------------------------------------


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


def parse_tcpdump(text: str) -> Decoded:
    """A captured LLDP frame from its ``tcpdump -xx`` hex dump; ParseError when it is no LLDP frame."""
    require_text(TOOL, text)
    data = parse_hexdump(text)
    if not data:
        raise ParseError(TOOL, "no '0x0000:  ....' hex dump lines")
    try:
        return decode(data)
    except ValueError as exc:
        raise ParseError(TOOL, str(exc)) from None
