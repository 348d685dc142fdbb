"""validators/test_cabling.py against the lab plan's nodes: LLDP neighbours as lldpcli -f json0 prints them
(rendered by fabric/render.py, the layout of the real capture lldpcli-json0__gpu-node-5-rails-...), and
smpquery's directed-route reads on InfiniBand."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, ToolMissing
from clusterforge.fabric.render import lldp_json0
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, validator

cabling = validator("cabling")


def _lldp(node: NodeExpect, swap: tuple[int, int] | None = None, drop: int | None = None) -> str:
    ends = [(w["netdev"], w["switch"], w["switch_port_name"]) for w in node.rail_neighbours]
    far = [(s, p) for _, s, p in ends]
    if swap:
        i, j = swap
        far[i], far[j] = far[j], far[i]
    return lldp_json0(
        [(nd, *f) for k, ((nd, _, _), f) in enumerate(zip(ends, far, strict=True)) if k != drop]
    )


def _roce(node: NodeExpect, text: str, state: str = "active", listened: str = "3600\n3600\n") -> FakeNode:
    return FakeNode(
        {
            cabling.LLDPD_STATE: (0 if state == "active" else 3, state + "\n"),
            cabling.LLDPD_AGE: (0 if listened.strip() else 1, listened),
            cabling.LLDP_SHOW: (0, text),
        }
    )


def test_roce_as_planned(roce_node: NodeExpect) -> None:
    probe = _roce(roce_node, _lldp(roce_node))
    for r in roce_node.rails:
        cabling.test_rail_neighbour(roce_node, probe, r.index)


def test_roce_swap_names_both_cables(roce_node: NodeExpect) -> None:
    probe = _roce(roce_node, _lldp(roce_node, swap=(0, 1)))
    with pytest.raises(CheckFailed) as exc:
        cabling.test_rail_neighbour(roce_node, probe, 1)
    msg = str(exc.value)
    assert "rails 1 and 0 are swapped" in msg
    assert "roce0-nl-0002 (roce-01 enp64s0np0 <-> roce0-leaf-su0-r1 swp1s0)" in msg
    assert "roce0-nl-0001 (roce-01 enp24s0np0 <-> roce0-leaf-su0-r0 swp1s0)" in msg
    cabling.test_rail_neighbour(roce_node, probe, 2)


def test_roce_no_neighbour(roce_node: NodeExpect) -> None:
    probe = _roce(roce_node, _lldp(roce_node, drop=3))
    with pytest.raises(CheckFailed, match=r"rail 3 \(enp94s0np0\): no LLDP neighbour \(cable/switch LLDP\)"):
        cabling.test_rail_neighbour(roce_node, probe, 3)


def test_silence_right_after_lldpd_started_is_not_a_verdict(roce_node: NodeExpect) -> None:
    """A node that has just booted has not heard its switches yet (they announce every 30 s): error, then a
    fail once lldpd has listened a full interval; a wrong neighbour is a fail however young lldpd is."""
    text = _lldp(roce_node, drop=3)
    with pytest.raises(CheckError, match=r"lldpd has listened on roce-01 for only 12 s .* again in 23 s"):
        cabling.test_rail_neighbour(roce_node, _roce(roce_node, text, listened="12\n12\n"), 3)
    with pytest.raises(CheckFailed, match="no LLDP neighbour"):
        cabling.test_rail_neighbour(roce_node, _roce(roce_node, text, listened="35\n34\n"), 3)
    young = _roce(roce_node, _lldp(roce_node, swap=(0, 1)), listened="5\n")
    with pytest.raises(CheckFailed, match="rails 1 and 0 are swapped"):
        cabling.test_rail_neighbour(roce_node, young, 1)
    with pytest.raises(CheckError, match="not recognised"):
        cabling.test_rail_neighbour(roce_node, _roce(roce_node, text, listened="1-02:03\n"), 3)


def test_lldpd_down_or_missing_is_an_error(roce_node: NodeExpect) -> None:
    with pytest.raises(CheckError, match="lldpd is inactive"):
        cabling.test_rail_neighbour(roce_node, _roce(roce_node, "", state="inactive"), 0)
    with pytest.raises(ToolMissing):
        cabling.test_rail_neighbour(roce_node, FakeNode({cabling.LLDPD_STATE: (0, "active\n")}), 0)


def _ib_answers(node: NodeExpect, swap: tuple[int, int] | None = None) -> dict[str, tuple[int, str]]:
    ends = [(w["hca"], w["switch"], w["switch_port"]) for w in node.rail_neighbours]
    far = [(s, p) for _, s, p in ends]
    if swap:
        i, j = swap
        far[i], far[j] = far[j], far[i]
    out = {}
    for (hca, _, _), (sw, port) in zip(ends, far, strict=True):
        desc, info = cabling.smp_cmds(hca, 1)
        out[desc] = (0, f"Node Description:................MF0;{sw}:MQM9700/U1\n")
        head = "# Port info: DR path slid 65535; dlid 65535; 0,1 port 0\n"
        out[info] = (
            0,
            f"{head}LocalPort:.......................{port}\nLinkState:.......................Active\n",
        )
    return out


def test_infiniband_far_end(ib_node: NodeExpect) -> None:
    cabling.test_rail_neighbour(ib_node, FakeNode(_ib_answers(ib_node)), 4)
    with pytest.raises(CheckFailed, match="rails 2 and 5 are swapped"):
        cabling.test_rail_neighbour(ib_node, FakeNode(_ib_answers(ib_node, swap=(2, 5))), 2)


def test_prefetch_lists_the_reads(roce_node: NodeExpect, ib_node: NodeExpect) -> None:
    assert cabling.commands(roce_node) == [cabling.LLDPD_STATE, cabling.LLDPD_AGE, cabling.LLDP_SHOW]
    assert len(cabling.commands(ib_node)) == 2 * len(ib_node.rails)
