"""hw/lldp_frame.py: LLDPDUs byte for byte against the IEEE 802.1AB TLV layout, and a real switch frame
(tcpdump-xx-lldp__siemens-scalance-x212-switch1-gopacket__1.txt, SOURCES.md) decoded."""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw import lldp_frame as lf
from tests.conftest import REAL

SIEMENS = "tcpdump-xx-lldp__siemens-scalance-x212-switch1-gopacket__1.txt"


def test_tlv_header_is_7_bit_type_9_bit_length() -> None:
    assert lf.tlv(1, b"\x04" + bytes(6)) == bytes.fromhex("0207") + b"\x04" + bytes(6)
    assert lf.tlv(127, b"x" * 511)[:2] == bytes.fromhex("ffff")
    assert lf.tlv(0, b"") == b"\x00\x00"
    for bad in ((128, b""), (1, b"x" * 512), (-1, b"")):
        with pytest.raises(ValueError):
            lf.tlv(*bad)


def test_lldpdu_bytes() -> None:
    pdu = lf.lldpdu("02:00:00:00:00:01", "swp1s0", 20, "leaf-a", "swp1s0")
    assert (
        pdu
        == bytes.fromhex(
            "0207"
            "04020000000001"  # Chassis ID: type 1, length 7, subtype 4 (MAC), the MAC
            "0407"
            "05"
            + b"swp1s0".hex()  # Port ID: type 2, length 7, subtype 5 (interface name)
            + "0602"
            "0014"  # TTL: type 3, length 2, 20 s
            "0806"
            + b"swp1s0".hex()  # Port Description: type 4
            + "0a06"
            + b"leaf-a".hex()  # System Name: type 5
            + "0000"  # End
        )
    )
    assert lf.lldpdu("02:00:00:00:00:01", "swp1s0", 0) == bytes.fromhex("020704020000000001") + bytes.fromhex(
        "040705" + b"swp1s0".hex() + "060200000000"
    )
    with pytest.raises(ValueError):
        lf.lldpdu("02:00:00:00:00:01", "", 20)
    with pytest.raises(ValueError):
        lf.lldpdu("02:00:00:00:00:01", "p", 70000)


def test_frame_header_and_padding() -> None:
    f = lf.frame("02:cf:00:00:00:01", lf.lldpdu("02:00:00:00:00:01", "p1", 20))
    assert f[:6] == bytes.fromhex("0180c200000e") and f[6:12] == bytes.fromhex("02cf00000001")
    assert f[12:14] == b"\x88\xcc" and len(f) == 60 and f.endswith(b"\x00" * 10)
    d = lf.decode(f)
    assert d.dst == "01:80:c2:00:00:0e" and d.chassis == (4, bytes.fromhex("020000000001"))
    assert d.port == (5, b"p1") and d.ttl == 20 and d.text(lf.SYSTEM_NAME) == ""


def test_decode_a_real_switch_frame() -> None:
    data = lf.parse_hexdump((REAL / SIEMENS).read_text())
    assert len(data) == 236
    d = lf.decode(data)
    assert d.src == "00:1b:1b:02:e6:1f" and d.chassis == (7, b"switch1") and d.port == (7, b"port-001")
    assert d.ttl == 20 and d.text(lf.SYSTEM_NAME) == "Switch1"
    assert d.text(lf.PORT_DESCRIPTION) == "Siemens, SIMATIC NET, Ethernet Switch Port 01"
    # the builder's TLV encoding reproduces the real frame's mandatory TLVs byte for byte
    assert (
        lf.tlv(lf.CHASSIS_ID, b"\x07switch1")
        + lf.tlv(lf.PORT_ID, b"\x07port-001")
        + lf.tlv(lf.TTL, b"\x00\x14")
        == data[14 : 14 + 10 + 11 + 4]
    )


def test_decode_refuses_broken_frames() -> None:
    good = lf.frame("02:00:00:00:00:02", lf.lldpdu("02:00:00:00:00:01", "p1", 20))
    for bad in (good[:12] + b"\x08\x00" + good[14:], good[:20], good[:14] + good[14 + 9 :]):
        with pytest.raises(ValueError):
            lf.decode(bad)


def test_parse_tcpdump() -> None:
    d = lf.parse_tcpdump((REAL / SIEMENS).read_text())
    assert d.text(lf.SYSTEM_NAME) == "Switch1"
    with pytest.raises(ParseError):
        lf.parse_tcpdump("13:03:20.982430 LLDP, length 222: Switch1\n")
    with pytest.raises(ParseError):
        lf.parse_tcpdump("\t0x0000:  0180 c200 000e 001b 1b02 e61f 0800 0208  ................\n")
