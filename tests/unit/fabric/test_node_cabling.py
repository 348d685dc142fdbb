"""fabric/node_cabling.py: the per-node rail cabling verdicts on a real `lldpcli -f json0` capture (a GPU node
with 4 rails on SONiC leaves) and on InfiniBand far-end reads."""

from __future__ import annotations

from typing import Any

from clusterforge.fabric.node_cabling import NO_NEIGHBOUR, ib_seen, judge, lldp_seen
from clusterforge.hw import lldp
from tests.conftest import REPO

REAL = REPO / "tests/fixtures/real/lldpcli-json0__gpu-node-5-rails-sonic-ds730-leafs-unifabric__2.txt"
RAILS = [("ens108np0", "LEAF01"), ("ens110np0", "LEAF02"), ("ens841np0", "LEAF03"), ("ens842np0", "LEAF04")]


def _want(rails: list[tuple[str, str]], port: str = "Ethernet184") -> list[dict[str, Any]]:
    return [
        {
            "rail": i,
            "netdev": nd,
            "hca": f"mlx5_{i}",
            "switch": sw,
            "switch_port": 47,
            "switch_port_name": port,
            "cable_id": f"c-nl-{i + 1:04d}",
        }
        for i, (nd, sw) in enumerate(rails)
    ]


def _seen() -> dict[str, Any]:
    return lldp_seen(lldp.parse(REAL.read_text()))


def test_as_cabled_passes() -> None:
    out = judge("gpu-5", _want(RAILS), _seen(), ib=False)
    assert [r.verdict for r in out] == ["pass"] * 4


def test_fqdn_system_name_matches_the_planned_short_name() -> None:
    seen = _seen()
    seen["ens108np0"] = [s.__class__("LEAF01.dc1.example", s.ports) for s in seen["ens108np0"]]
    assert judge("gpu-5", _want(RAILS), seen, ib=False)[0].verdict == "pass"


def test_two_rails_swapped_are_named_by_both_ends() -> None:
    # the plan has rail 0 on LEAF02 and rail 1 on LEAF01: the node (as captured) has them crossed
    planned = [(RAILS[0][0], "LEAF02"), (RAILS[1][0], "LEAF01"), *RAILS[2:]]
    out = judge("gpu-5", _want(planned), _seen(), ib=False)
    assert [r.verdict for r in out] == ["fail", "fail", "pass", "pass"]
    assert out[0].swapped_with == 1 and out[1].swapped_with == 0
    msg = out[0].message
    assert "rails 0 and 1 are swapped" in msg
    assert "c-nl-0001 (gpu-5 ens108np0 <-> LEAF02 Ethernet184)" in msg
    assert "c-nl-0002 (gpu-5 ens110np0 <-> LEAF01 Ethernet184)" in msg
    assert "swap the cables at LEAF02 Ethernet184 and LEAF01 Ethernet184" in msg


def test_wrong_port_and_unknown_switch() -> None:
    out = judge("gpu-5", _want(RAILS, port="Ethernet0"), _seen(), ib=False)
    assert out[0].verdict == "fail" and out[0].found == "LEAF01 Ethernet184" and out[0].swapped_with is None
    assert "re-seat the cable at LEAF01 Ethernet0" in out[0].message


def test_one_way_move_is_not_called_a_swap() -> None:
    seen = _seen()
    seen["ens108np0"] = seen["ens110np0"]  # rail 0 plugged where rail 1 belongs; rail 1 still there too
    out = judge("gpu-5", _want(RAILS), seen, ib=False)
    assert out[0].verdict == "fail" and out[0].swapped_with == 1
    assert "the planned end of rail 1" in out[0].message and "swapped" not in out[0].message
    assert out[1].verdict == "pass"


def test_no_neighbour_names_the_rail() -> None:
    seen = _seen()
    del seen["ens841np0"]
    out = judge("gpu-5", _want(RAILS), seen, ib=False)
    assert out[2].verdict == "fail" and out[2].found == NO_NEIGHBOUR
    assert out[2].message.startswith("rail 2 (ens841np0): no LLDP neighbour (cable/switch LLDP)")


def test_infiniband_far_end() -> None:
    want = [
        {"rail": 0, "netdev": "ibp1", "hca": "mlx5_0", "switch": "su1-l0", "switch_port": 3,
         "switch_port_name": "3", "cable_id": "ib-nl-0001"},
        {"rail": 1, "netdev": "ibp2", "hca": "mlx5_1", "switch": "su1-l1", "switch_port": 3,
         "switch_port_name": "3", "cable_id": "ib-nl-0002"},
    ]  # fmt: skip
    ok = ib_seen("mlx5_0", "MF0;su1-l0:MQM9700/U1", 3) | ib_seen("mlx5_1", "su1-l1", 3)
    assert [r.verdict for r in judge("gpu-1", want, ok, ib=True)] == ["pass", "pass"]
    crossed = ib_seen("mlx5_0", "MF0;su1-l1:MQM9700/U1", 3) | ib_seen("mlx5_1", "MF0;su1-l0:MQM9700/U1", 3)
    out = judge("gpu-1", want, crossed, ib=True)
    assert "rails 0 and 1 are swapped" in out[0].message and "gpu-1 mlx5_0 <-> su1-l0 3" in out[0].message
    down = judge("gpu-1", want, ib_seen("mlx5_0", "", None), ib=True)
    assert down[0].verdict == "fail" and "no neighbour" in down[0].found
