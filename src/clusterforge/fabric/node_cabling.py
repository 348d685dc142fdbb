"""The per-node cabling check: each rail's neighbour (LLDP on RoCE, the SM's view of the far switch on
InfiniBand) against the switch and port the plan cables it to (plan/desired_fabric.rail_neighbours, the same
cables as `cables.csv` and `fabric check`).

Pure: the validator (validators/test_cabling.py) reads the node and hands the outputs here. A rail whose
neighbour is the planned end of another rail of the same node is reported with that rail, by both ends of
both cables; when the other rail sees this rail's planned end, the two cables are swapped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clusterforge.fabric.observed import switch_name
from clusterforge.hw import lldp

NO_NEIGHBOUR = "no LLDP neighbour (cable/switch LLDP)"
#: How long lldpd must have listened before silence on a rail means something: one transmit interval of the
#: switch (IEEE 802.1AB msgTxInterval, default 30 s; lldpd's and Cumulus' default tx-interval is 30 s too)
#: plus a margin for the first frame after link-up. A node that has just booted has heard nothing yet.
LLDP_LISTEN_S = 35
Verdict = Literal["pass", "fail"]


@dataclass(frozen=True)
class Seen:
    """What a rail's port sees at the far end: a switch name and port (name or IB port number)."""

    switch: str
    ports: tuple[str, ...]  # acceptable spellings of the far port (LLDP port ID and description)

    def show(self) -> str:
        return f"{self.switch} {self.ports[0] if self.ports else '?'}"


@dataclass(frozen=True)
class RailCabling:
    rail: int
    netdev: str
    verdict: Verdict
    expected: str
    found: str
    message: str
    swapped_with: int | None = None


def _short(name: str) -> str:
    return name.split(".", 1)[0]


def _matches(want: Mapping[str, Any], seen: Seen, ib: bool) -> bool:
    if _short(seen.switch) != _short(str(want["switch"])) and seen.switch != want["switch"]:
        return False
    port = str(want["switch_port"]) if ib else str(want["switch_port_name"])
    return port in seen.ports


def _end(want: Mapping[str, Any], ib: bool) -> str:
    return f"{want['switch']} {want['switch_port'] if ib else want['switch_port_name']}"


def _cable(node: str, want: Mapping[str, Any], ib: bool) -> str:
    own = want["hca"] if ib else want["netdev"]
    return f"cable {want['cable_id'] or '?'} ({node} {own} <-> {_end(want, ib)})"


def judge(
    node: str, expected: list[Mapping[str, Any]], seen: Mapping[str, list[Seen]], ib: bool
) -> list[RailCabling]:
    """One verdict per expected rail. ``seen`` maps the rail's netdev (RoCE) or HCA (InfiniBand) to what
    its port sees (empty: nothing heard)."""
    key = "hca" if ib else "netdev"
    heard = {str(w[key]): seen.get(str(w[key]), []) for w in expected}
    out: list[RailCabling] = []
    for w in expected:
        mine = heard[str(w[key])]
        want = _end(w, ib)
        if any(_matches(w, s, ib) for s in mine):
            out.append(RailCabling(int(w["rail"]), str(w["netdev"]), "pass", want, want, "as planned"))
            continue
        if not mine:
            what = NO_NEIGHBOUR if not ib else "no neighbour on the port (cable/port down)"
            out.append(
                RailCabling(
                    int(w["rail"]),
                    str(w["netdev"]),
                    "fail",
                    want,
                    what,
                    f"rail {w['rail']} ({w[key]}): {what}; expected {_cable(node, w, ib)}",
                )
            )
            continue
        found = mine[0]
        other = next((o for o in expected if o is not w and _matches(o, found, ib)), None)
        if other is None:
            msg = (
                f"rail {w['rail']} ({w[key]}) reaches {found.show()}, which no rail of {node} is planned to; "
                f"expected {_cable(node, w, ib)}: re-seat the cable at {want}"
            )
            out.append(RailCabling(int(w["rail"]), str(w["netdev"]), "fail", want, found.show(), msg))
            continue
        back = heard[str(other[key])]
        swapped = any(_matches(w, s, ib) for s in back)
        if swapped:
            msg = (
                f"rails {w['rail']} and {other['rail']} are swapped: {_cable(node, w, ib)} and "
                f"{_cable(node, other, ib)} are crossed; swap the cables at {_end(w, ib)} and "
                f"{_end(other, ib)} (or at {node} {w[key]} and {other[key]})"
            )
        else:
            msg = (
                f"rail {w['rail']} ({w[key]}) reaches {found.show()}, the planned end of rail "
                f"{other['rail']}: {node} {w[key]} belongs at {want} ({_cable(node, w, ib)}); move it there"
            )
        out.append(
            RailCabling(int(w["rail"]), str(w["netdev"]), "fail", want, found.show(), msg, int(other["rail"]))
        )
    return out


def lldpd_listened_s(ps_etimes: str) -> int | None:
    """Seconds the longest-running lldpd process has run, from ``ps -C lldpd -o etimes=`` (one integer per
    process, the privilege-separated pair shows two); None when no process was listed."""
    ages = [int(t) for t in ps_etimes.split() if t.isdigit()]
    if len(ages) != len(ps_etimes.split()):
        raise ValueError(f"ps etimes not understood: {ps_etimes.strip()[:80]!r}")
    return max(ages) if ages else None


def too_soon_to_judge(verdict: RailCabling, listened_s: int | None) -> bool:
    """A rail that heard nothing while lldpd has listened for less than one switch transmit interval is not
    measured yet (a node just booted or lldpd just restarted): not a cabling verdict."""
    return verdict.found == NO_NEIGHBOUR and listened_s is not None and listened_s < LLDP_LISTEN_S


def lldp_seen(neighbours: Iterable[lldp.Neighbor]) -> dict[str, list[Seen]]:
    """netdev -> what LLDP heard on it (system name, else chassis ID; port ID and description)."""
    out: dict[str, list[Seen]] = {}
    for n in neighbours:
        ports = tuple(p for p in dict.fromkeys((n.port, n.port_id, n.port_descr)) if p)
        out.setdefault(n.interface, []).append(Seen(n.sysname or n.chassis_id, ports))
    return out


def ib_seen(hca: str, node_description: str, local_port: int | None) -> dict[str, list[Seen]]:
    """hca -> the switch at the far end of its port (its node description, ``MF0;<name>:...`` understood)
    and the switch port the link lands on (PortInfo LocalPortNum of the far end); nothing when unknown."""
    if not node_description.strip() or local_port is None:
        return {hca: []}
    return {hca: [Seen(switch_name(node_description), (str(local_port),))]}
