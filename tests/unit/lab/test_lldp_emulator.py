"""lab/lldp_emulator.py: what each rail host end announces as wired, re-wired and swapped - the frames
decoded (hw/lldp_frame.py) and read back through the per-node cabling judge - and the withdrawal of a changed
attachment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clusterforge.fabric.node_cabling import judge, lldp_seen
from clusterforge.fabric.render import lldp_json0
from clusterforge.hw import lldp
from clusterforge.hw import lldp_frame as lf
from clusterforge.lab import lldp_emulator as em
from clusterforge.lab.labplan import LabPlan, load
from clusterforge.plan.build import Plan
from clusterforge.plan.expect import nodes_of


def _doc(lab_plan: Plan) -> dict[str, Any]:
    return json.loads(json.dumps(lab_plan.doc))


def _heard(plan: LabPlan, anns: list[em.Announcement], node: str) -> str:
    """What the node's lldpd would print: each announcement of its host ends, decoded from the frame."""
    rows = []
    netdevs = {r.host_link: r.netdev for n in plan.nodes for r in n.rails}
    for a in anns:
        if a.node == node and a.switch:
            d = lf.decode(lf.frame(em.host_mac(a), a.pdu()))
            rows.append((netdevs[a.host_link], d.text(lf.SYSTEM_NAME), d.port[1].decode()))
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
    assert len(sent) == 16 and all(lf.decode(d).ttl == em.TTL_S for _, d in sent)
    sent.clear()
    masters[r[3].host_link] = r[4].bridge
    e.tick()
    mine = [lf.decode(d) for ifname, d in sent if ifname == r[3].host_link]
    assert [d.ttl for d in mine] == [0, em.TTL_S]  # the old neighbour withdrawn, then the new one
    assert mine[0].port[1] == b"swp1s1" and mine[1].text(lf.SYSTEM_NAME) == "roce0-leaf-su0-r4"
    e.stop()
    assert sum(1 for _, d in sent if lf.decode(d).ttl == 0) == 1 + 16


def test_swap_argument() -> None:
    assert em._pair("roce-01:0,roce-02:3") == (("roce-01", 0), ("roce-02", 3))
