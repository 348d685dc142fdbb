"""The comparison engine on small hand-made fabrics: each finding, and only where it applies."""

from __future__ import annotations

from clusterforge.fabric.compare import Coverage, compare
from clusterforge.fabric.model import End, ExpectedLink, ObservedLink
from clusterforge.plan.site_layout import Loc


def _loc(rack: str, u: int) -> Loc:
    return Loc("dc1", 1, rack, u, 0.0, 0.0)


def _rail(cid: str, node: str, hca: str, leaf: str, port: int, u: int = 2) -> ExpectedLink:
    return ExpectedLink(
        cid,
        "node-leaf",
        "ib0",
        End(node, hca),
        End(leaf, str(port)),
        f"ibp{hca[-1]}s0",
        f"1/{port}/1",
        _loc("r01", u),
        _loc("nr01", 48),
        400,
        "4x",
    )


PLAN = [
    _rail("ib0-nl-0001", "gpu-1", "mlx5_0", "leaf-r0", 1),
    _rail("ib0-nl-0002", "gpu-1", "mlx5_1", "leaf-r1", 1),
    _rail("ib0-nl-0003", "gpu-2", "mlx5_0", "leaf-r0", 2, u=6),
    _rail("ib0-nl-0004", "gpu-2", "mlx5_1", "leaf-r1", 2, u=6),
    ExpectedLink(
        "ib0-ls-0001",
        "leaf-spine",
        "ib0",
        End("leaf-r0", "33"),
        End("spine-0", "1"),
        "1/17/1",
        "1/1/1",
        _loc("nr01", 48),
        _loc("ns01", 48),
        400,
        "4x",
    ),
]
KNOWN = {"gpu-1", "gpu-2", "leaf-r0", "leaf-r1", "spine-0"}
WHOLE = Coverage(whole_fabrics=frozenset({"ib0"}))


def _obs(a: End, b: End, speed: float = 400, width: str = "4x") -> ObservedLink:
    return ObservedLink(a, b, speed, width, "ibnet.txt")


def _as_planned() -> list[ObservedLink]:
    return [_obs(e.a, e.b) for e in PLAN]


def test_all_as_planned() -> None:
    r = compare(PLAN, _as_planned(), WHOLE, KNOWN)
    assert (r.checked, r.ok, r.findings, r.errors) == (5, 5, [], [])
    assert not r.deviated()


def test_two_rails_of_a_node_swapped_is_one_swap_fixed_at_the_node() -> None:
    obs = _as_planned()
    obs[0], obs[1] = _obs(PLAN[0].a, PLAN[1].b), _obs(PLAN[1].a, PLAN[0].b)
    r = compare(PLAN, obs, WHOLE, KNOWN)
    (f,) = r.findings
    assert f.problem == "swapped" and f.cables == ("ib0-nl-0001", "ib0-nl-0002") and r.ok == 3
    assert "r01U02 gpu-1 ibp0s0 (mlx5_0)" in f.message and "nr01U48 leaf-r1 port 1 (1/1/1)" in f.message
    assert f.fix == "swap the cables at r01U02 gpu-1 ibp0s0 (mlx5_0) and r01U02 gpu-1 ibp1s0 (mlx5_1)"
    assert r.deviated()


def test_two_nodes_crossed_on_one_leaf_is_fixed_at_the_leaf() -> None:
    obs = _as_planned()
    obs[0], obs[2] = _obs(PLAN[0].a, PLAN[2].b), _obs(PLAN[2].a, PLAN[0].b)
    (f,) = compare(PLAN, obs, WHOLE, KNOWN).findings
    assert f.problem == "swapped" and set(f.cables) == {"ib0-nl-0001", "ib0-nl-0003"}
    assert f.fix == "swap the cables at nr01U48 leaf-r0 port 1 (1/1/1) and nr01U48 leaf-r0 port 2 (1/2/1)"


def test_wrong_port_wrong_device_missing() -> None:
    obs = _as_planned()
    obs[0] = _obs(PLAN[0].a, End("leaf-r0", "9"))  # same leaf, unplanned port
    obs[1] = _obs(PLAN[1].a, End("spine-0", "7"))  # a rail on the spine
    del obs[3]  # gpu-2 mlx5_1 not seen at all
    r = compare(PLAN, obs, WHOLE, KNOWN)
    got = {f.cables: f.problem for f in r.findings}
    assert got == {
        ("ib0-nl-0001",): "wrong_port",
        ("ib0-nl-0002",): "wrong_device",
        ("ib0-nl-0004",): "missing",
    }
    wp = next(f for f in r.findings if f.problem == "wrong_port")
    assert "reaches leaf-r0 9" in wp.message and wp.fix.endswith(
        "to nr01U48 leaf-r0 port 1 (1/1/1) (cable ib0-nl-0001)"
    )


def test_leaf_spine_miswired_and_degraded() -> None:
    obs = _as_planned()
    obs[4] = _obs(End("leaf-r0", "33"), End("spine-0", "2"))
    obs[2] = _obs(PLAN[2].a, PLAN[2].b, speed=200)
    r = compare(PLAN, obs, WHOLE, KNOWN)
    by = {f.problem: f for f in r.findings}
    assert set(by) == {"wrong_port", "degraded"}
    assert by["wrong_port"].kind == "leaf-spine" and by["wrong_port"].cables == ("ib0-ls-0001",)
    assert "4x 200 Gb/s" in by["degraded"].message and by["degraded"].cables == ("ib0-nl-0003",)
    narrow = compare(PLAN, [*_as_planned()[:4], _obs(PLAN[4].a, PLAN[4].b, width="2x")], WHOLE, KNOWN)
    assert [f.problem for f in narrow.findings] == ["degraded"]


def test_extra_link_and_unexpected_device() -> None:
    obs = [*_as_planned(), _obs(End("leaf-r0", "40"), End("leaf-r1", "40"))]
    obs.append(_obs(End("rogue-host", "mlx5_0"), End("leaf-r1", "30")))
    r = compare(PLAN, obs, WHOLE, KNOWN)
    assert r.ok == 5
    assert [f.problem for f in r.findings] == ["extra", "unexpected_device"]
    assert "rogue-host" in r.findings[1].message


def test_lldp_coverage_only_checks_reporting_devices() -> None:
    cov = Coverage(devices=frozenset({"gpu-1"}), errors=("fabric ib0: no LLDP output for gpu-2",))
    r = compare(PLAN, _as_planned()[:2], cov, KNOWN)
    assert (r.checked, r.ok, r.findings) == (2, 2, [])
    assert r.deviated() and not r.deviated(allow_unchecked=True)
