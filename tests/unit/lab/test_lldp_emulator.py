"""lab/lldp_emulator.py: LLDPDUs byte for byte against the 802.1AB TLV layout, a real switch frame decoded
(tests/fixtures/real/tcpdump-xx-lldp__siemens-...), and what each rail host end announces as wired, re-wired
and swapped - read back through the per-node cabling judge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clusterforge.fabric.node_cabling import judge, lldp_seen
from clusterforge.fabric.render import lldp_json0
from clusterforge.hw import lldp
from clusterforge.lab import lldp_emulator as em
from clusterforge.lab.labplan import LabPlan, load
from clusterforge.plan.build import Plan
from clusterforge.plan.expect import nodes_of
from tests.conftest import REAL

SIEMENS = REAL / "tcpdump-xx-lldp__siemens-scalance-x212-switch1-gopacket__1.txt"


def test_tlv_header_is_7_bit_type_9_bit_length() -> None:
    assert em.tlv(1, b"\x04" + bytes(6)) == bytes.fromhex("0207") + b"\x04" + bytes(6)
    assert em.tlv(127, b"x" * 511)[:2] == bytes.fromhex("ffff")
    assert em.tlv(0, b"") == b"\x00\x00"
    for bad in ((128, b""), (1, b"x" * 512), (-1, b"")):
        with pytest.raises(ValueError):
            em.tlv(*bad)


def test_lldpdu_bytes() -> None:
    pdu = em.lldpdu("02:00:00:00:00:01", "swp1s0", 20, "leaf-a", "swp1s0")
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
    assert em.lldpdu("02:00:00:00:00:01", "swp1s0", 0) == bytes.fromhex("020704020000000001") + bytes.fromhex(
        "040705" + b"swp1s0".hex() + "060200000000"
    )
    with pytest.raises(ValueError):
        em.lldpdu("02:00:00:00:00:01", "", 20)
    with pytest.raises(ValueError):
        em.lldpdu("02:00:00:00:00:01", "p", 70000)


def test_frame_header_and_padding() -> None:
    f = em.frame("02:cf:00:00:00:01", em.lldpdu("02:00:00:00:00:01", "p1", 20))
    assert f[:6] == bytes.fromhex("0180c200000e") and f[6:12] == bytes.fromhex("02cf00000001")
    assert f[12:14] == b"\x88\xcc" and len(f) == 60 and f.endswith(b"\x00" * 10)
    d = em.decode(f)
    assert d.dst == "01:80:c2:00:00:0e" and d.chassis == (4, bytes.fromhex("020000000001"))
    assert d.port == (5, b"p1") and d.ttl == 20 and d.text(em.SYSTEM_NAME) == ""


def test_decode_a_real_switch_frame() -> None:
    data = em.parse_hexdump(SIEMENS.read_text())
    assert len(data) == 236
    d = em.decode(data)
    assert d.src == "00:1b:1b:02:e6:1f" and d.chassis == (7, b"switch1") and d.port == (7, b"port-001")
    assert d.ttl == 20 and d.text(em.SYSTEM_NAME) == "Switch1"
    assert d.text(em.PORT_DESCRIPTION) == "Siemens, SIMATIC NET, Ethernet Switch Port 01"
    # the builder's TLV encoding reproduces the real frame's mandatory TLVs byte for byte
    assert (
        em.tlv(em.CHASSIS_ID, b"\x07switch1")
        + em.tlv(em.PORT_ID, b"\x07port-001")
        + em.tlv(em.TTL, b"\x00\x14")
        == data[14 : 14 + 10 + 11 + 4]
    )


def test_decode_refuses_broken_frames() -> None:
    good = em.frame("02:00:00:00:00:02", em.lldpdu("02:00:00:00:00:01", "p1", 20))
    for bad in (good[:12] + b"\x08\x00" + good[14:], good[:20], good[:14] + good[14 + 9 :]):
        with pytest.raises(ValueError):
            em.decode(bad)


def _doc(lab_plan: Plan) -> dict[str, Any]:
    return json.loads(json.dumps(lab_plan.doc))


def _heard(plan: LabPlan, anns: list[em.Announcement], node: str) -> str:
    """What the node's lldpd would print: each announcement of its host ends, decoded from the frame."""
    rows = []
    netdevs = {r.host_link: r.netdev for n in plan.nodes for r in n.rails}
    for a in anns:
        if a.node == node and a.switch:
            d = em.decode(em.frame(em.host_mac(a), a.pdu()))
            rows.append((netdevs[a.host_link], d.text(em.SYSTEM_NAME), d.port[1].decode()))
    return lldp_json0(rows)


def test_announcements_follow_the_wiring_and_the_checks_see_it(lab_plan: Plan) -> None:
    doc = _doc(lab_plan)
    plan = load(doc)
    node = nodes_of(doc, names=["roce-01"])["roce-01"]
    as_wired = em.announcements(plan)
    assert {a.node for a in as_wired} == {"roce-01", "roce-02"}  # InfiniBand rails speak no LLDP
    a0 = next(a for a in as_wired if a.node == "roce-01" and a.rail == 0)
    assert (a0.switch, a0.port, a0.bridge) == ("roce0-leaf-su0-r0", "swp1s0", "cfbr-roce0-0")
    ok = judge(
        "roce-01", node.rail_neighbours, lldp_seen(lldp.parse(_heard(plan, as_wired, "roce-01"))), ib=False
    )
    assert {v.verdict for v in ok} == {"pass"}

    # re-attach roce-01's rail 0 and rail 1 host ends to each other's bridges
    r = {x.index: x for x in plan.node("roce-01").rails}
    masters: dict[str, str | None] = {a.host_link: a.bridge for a in as_wired}
    masters[r[0].host_link], masters[r[1].host_link] = r[1].bridge, r[0].bridge
    rewired = em.announcements(plan, masters)
    out = judge(
        "roce-01", node.rail_neighbours, lldp_seen(lldp.parse(_heard(plan, rewired, "roce-01"))), ib=False
    )
    assert [v.verdict for v in out[:3]] == ["fail", "fail", "pass"]
    assert "rails 0 and 1 are swapped" in out[0].message and "roce0-nl-0001" in out[0].message

    # the same through `swaps`, without touching the wiring; a detached host end announces nothing
    assert em.announcements(plan, swaps=[(("roce-01", 0), ("roce-01", 1))]) == rewired
    masters[r[2].host_link] = None
    assert next(a for a in em.announcements(plan, masters) if a.host_link == r[2].host_link).switch == ""
    with pytest.raises(ValueError):
        em.announcements(plan, swaps=[(("roce-01", 0), ("nope", 1))])


def test_emulator_withdraws_a_changed_attachment(lab_plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load(_doc(lab_plan))
    r = {x.index: x for x in plan.node("roce-02").rails}
    masters = {a.host_link: a.bridge for a in em.announcements(plan)}
    sent: list[tuple[str, bytes]] = []

    class Ip:
        stdout = ""

    def fake_ip(*args: str, **_: Any) -> Ip:
        out = Ip()
        out.stdout = json.dumps([{"ifname": k, "master": v} for k, v in masters.items()])
        return out

    monkeypatch.setattr(em.net, "ip", fake_ip)
    monkeypatch.setattr(em, "send", lambda ifname, data: sent.append((ifname, data)))
    e = em.Emulator(plan)
    e.tick()
    assert len(sent) == 16 and all(em.decode(d).ttl == em.TTL_S for _, d in sent)
    sent.clear()
    masters[r[3].host_link] = r[4].bridge
    e.tick()
    mine = [em.decode(d) for ifname, d in sent if ifname == r[3].host_link]
    assert [d.ttl for d in mine] == [0, em.TTL_S]  # the old neighbour withdrawn, then the new one
    assert mine[0].port[1] == b"swp1s1" and mine[1].text(em.SYSTEM_NAME) == "roce0-leaf-su0-r4"
    e.stop()
    assert sum(1 for _, d in sent if em.decode(d).ttl == 0) == 1 + 16


def test_swap_argument() -> None:
    assert em._pair("roce-01:0,roce-02:3") == (("roce-01", 0), ("roce-02", 3))
