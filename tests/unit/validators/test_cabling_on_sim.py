"""validators/test_cabling.py's InfiniBand check fed by the lab simulator's smpquery (the node-side code,
run under a temporary root): the lab's correctly cabled ib-01 passes, a `cable-swap` fault fails naming
both cables, a node without smpquery is an error."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, ToolMissing
from clusterforge.plan import Plan
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import RC_REMOTE_255, RC_SSH
from tests.unit.sim.conftest import SimNode

from .conftest import FakeNode, validator

cabling = validator("cabling")


@pytest.fixture
def sim(tmp_path: Path, lab_plan: Plan) -> SimNode:
    return SimNode(tmp_path / "ib-01", "h100-sxm-8x400g-ib", node="ib-01", plan=lab_plan.doc)


def _answers(sim: SimNode, node: NodeExpect) -> FakeNode:
    """Every command the check prefetches, answered by the simulated node (a remote 255 comes back as
    RC_REMOTE_255, as remote/commands.wrap and the prefetch batch pass it)."""
    out = {}
    for cmd in cabling.commands(node):
        rc, stdout, stderr = sim.run(*shlex.split(cmd))
        out[cmd] = (RC_REMOTE_255 if rc == RC_SSH else rc, stdout, stderr)
    return FakeNode(out)


def test_planned_wiring_passes(sim: SimNode, ib_node: NodeExpect) -> None:
    probe = _answers(sim, ib_node)
    for r in ib_node.rails:
        cabling.test_rail_neighbour(ib_node, probe, r.index)


def test_cable_swap_fails_naming_both_cables(sim: SimNode, ib_node: NodeExpect) -> None:
    sim.fault("cable-swap", rail="2,5")
    probe = _answers(sim, ib_node)
    ends = {w["rail"]: w for w in ib_node.rail_neighbours}
    for rail, other in ((2, 5), (5, 2)):
        with pytest.raises(CheckFailed) as exc:
            cabling.test_rail_neighbour(ib_node, probe, rail)
        msg = str(exc.value)
        assert f"rails {rail} and {other} are swapped" in msg
        for w in (ends[2], ends[5]):
            assert f"cable {w['cable_id']} (ib-01 {w['hca']} <-> {w['switch']} {w['switch_port']})" in msg
    cabling.test_rail_neighbour(ib_node, probe, 0)  # the other rails still pass
    sim.clear("cable-swap")
    probe = _answers(sim, ib_node)
    cabling.test_rail_neighbour(ib_node, probe, 2)
    cabling.test_rail_neighbour(ib_node, probe, 5)


def test_missing_smpquery_is_an_error(ib_node: NodeExpect) -> None:
    with pytest.raises(ToolMissing):
        cabling.test_rail_neighbour(ib_node, FakeNode({}), 0)
    assert issubclass(ToolMissing, CheckError)


def test_down_rail_fails_only_that_rail(sim: SimNode, ib_node: NodeExpect) -> None:
    """A down port: smpquery's directed-route SMP gets no answer (iberror, exit 255): the rail hears
    nothing and fails naming its cable; the other rails are still judged (and pass)."""
    sim.fault("rail-down", rail=3)
    probe = _answers(sim, ib_node)
    w = next(w for w in ib_node.rail_neighbours if w["rail"] == 3)
    with pytest.raises(CheckFailed) as exc:
        cabling.test_rail_neighbour(ib_node, probe, 3)
    assert "rail 3 (mlx5_3): no neighbour on the port (cable/port down)" in str(exc.value)
    assert f"cable {w['cable_id']} (ib-01 mlx5_3 <-> {w['switch']} {w['switch_port']})" in str(exc.value)
    for r in (0, 2, 4):
        cabling.test_rail_neighbour(ib_node, probe, r)


def test_smpquery_that_cannot_open_its_port_is_an_error(ib_node: NodeExpect) -> None:
    failed = (RC_REMOTE_255, "smpquery: iberror: failed: Failed to open 'mlx5_0' port '1'\n")
    probe = FakeNode(dict.fromkeys(cabling.commands(ib_node), failed))
    with pytest.raises(CheckError, match="exited 255"):
        cabling.test_rail_neighbour(ib_node, probe, 0)
