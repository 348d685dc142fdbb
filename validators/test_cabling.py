"""Rail cabling against the plan: each rail's neighbour is the leaf and port that `cables.csv` cables it to
(plan.json `rails[].leaf/leaf_port` named as the sheet names them: plan/desired_fabric.rail_neighbours).

RoCE: the neighbour the node's lldpd heard (`lldpcli -f json0 show neighbors`; the lldpd role configures
it). InfiniBand (no LLDP): the far end of the rail's port over a directed route, `smpquery -D nodedesc 0,1`
(the switch's node description) and `smpquery -D portinfo 0,1` (LocalPort: the switch port the SMP entered
by, i.e. where the node's cable lands). Two crossed rails are named by both ends of both cables; a rail
that hears nothing fails naming it (on InfiniBand: the directed-route SMP got no answer, smpquery's
`iberror: ... query failed`, exit 255 - the port is down or nothing answers at its far end); lldpd or
smpquery missing / not running, or smpquery unable to open the HCA port, is an error, never a verdict; so
is a RoCE rail that heard nothing while lldpd has listened for less than a switch's transmit interval
(fabric/node_cabling.LLDP_LISTEN_S: a node just booted).
"""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Probe, prefetches
from clusterforge.fabric.node_cabling import (
    LLDP_LISTEN_S,
    Seen,
    ib_seen,
    judge,
    lldp_seen,
    lldpd_listened_s,
    too_soon_to_judge,
)
from clusterforge.hw import ParseError, ibmad, lldp
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import RC_REMOTE_255, argv

pytestmark = pytest.mark.quick

LLDP_SHOW = argv("lldpcli", "-f", "json0", "show", "neighbors")
LLDPD_STATE = argv("systemctl", "is-active", "lldpd")
LLDPD_AGE = argv("ps", "-C", "lldpd", "-o", "etimes=")


def smp_cmds(hca: str, port: int) -> tuple[str, str]:
    base = ("smpquery", "-C", hca, "-P", str(port), "-D")
    return argv(*base, "nodedesc", "0,1"), argv(*base, "portinfo", "0,1")


@prefetches
def commands(node: NodeExpect) -> list[str]:
    if node.roce:
        return [LLDPD_STATE, LLDPD_AGE, LLDP_SHOW]
    return [c for r in node.rails for c in smp_cmds(r.hca, r.port)]


def _expected(node: NodeExpect) -> list[dict[str, Any]]:
    try:
        return node.rail_neighbours
    except (KeyError, ValueError) as exc:
        raise CheckError(f"no cabling expectation for {node.name}: {exc}") from None


def _lldp(node: NodeExpect, probe: Probe) -> dict[str, list[Seen]]:
    state = probe.run(LLDPD_STATE, ok=(0, 3, 4)).strip()
    if state != "active":
        raise CheckError(
            f"lldpd is {state or 'unknown'} on {node.name}: cannot read LLDP neighbours "
            "(install and start it: role lldpd, tag lldpd)"
        )
    return lldp_seen(probe.parse(LLDP_SHOW, lldp.parse))


def _smp(probe: Probe, command: str) -> dict[str, str] | None:
    """The fields smpquery printed; None when its directed-route SMP got no answer (smpquery exits 255,
    which the remote wrapper passes back as RC_REMOTE_255)."""
    out = probe.run(command, ok=(0, RC_REMOTE_255))
    try:
        ibmad.parse_query_failed(out)
        return None
    except ParseError:
        pass
    return probe.parse(command, lambda t: ibmad.parse_fields(t, "smpquery"), ok=(0,))


def _ib(node: NodeExpect, probe: Probe, hca: str, port: int) -> dict[str, list[Seen]]:
    desc_cmd, info_cmd = smp_cmds(hca, port)
    desc, info = _smp(probe, desc_cmd), _smp(probe, info_cmd)
    if desc is None or info is None:
        return ib_seen(hca, "", None)
    local = info.get("LocalPort", "")
    return ib_seen(hca, desc.get("Node Description", ""), int(local) if local.isdigit() else None)


def test_rail_neighbour(node: NodeExpect, probe: Probe, rail: int) -> None:
    """The rail reaches the planned leaf and port (LLDP on RoCE, the far end's SMP reads on InfiniBand)."""
    expected = _expected(node)
    mine = next((w for w in expected if int(w["rail"]) == rail), None)
    if mine is None:
        raise CheckError(f"plan.json has no leaf for rail {rail} of {node.name}")
    ib = not node.roce
    if ib:
        seen: dict[str, list[Seen]] = {}
        for w in expected:  # every rail: a crossed pair is only told from a one-way move with both ends
            r = node.rail(int(w["rail"]))
            seen |= _ib(node, probe, r.hca, r.port)
    else:
        seen = _lldp(node, probe)
    probe.note("seen", {k: [s.show() for s in v] for k, v in seen.items()})
    verdict = next(v for v in judge(node.name, expected, seen, ib) if v.rail == rail)
    if verdict.verdict != "pass" and not ib:
        listened = probe.parse(LLDPD_AGE, lldpd_listened_s, ok=(0, 1))
        if too_soon_to_judge(verdict, listened):
            raise CheckError(
                f"rail {rail} ({verdict.netdev}) heard no LLDP neighbour, but lldpd has listened on "
                f"{node.name} for only {listened} s (a switch announces every 30 s): run the check again in "
                f"{LLDP_LISTEN_S - (listened or 0)} s"
            )
    if verdict.verdict != "pass":
        raise CheckFailed(f"rail {rail} cabling", verdict.expected, verdict.found, verdict.message)
