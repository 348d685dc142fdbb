"""Where every device of a plan stands: site, row, rack, U, and the rack's floor position.

The layout follows `site.cabling` (docs/fabric.md, "Cabling sheet"):

* compute racks stand in rows of `racks_per_row`, in spec order; node j of a rack sits at
  U = first_node_u + j * node_height_u; the management ToR takes the top U, the BMC ToR the ones below it;
* each row ends with network racks (`nr<row><a, b, ...>`) holding the leaves of every scalable unit whose
  first node is in that row (then the storage leaves), `switches_per_network_rack` at most, top down;
* spines and cores stand in a network row after the last compute row (`ns01`, `ns02`, ...).

Cable runs are estimated from that: inside a rack, the U distance; between racks, up to the overhead tray
at both ends (`tray_rise_m` each), along the rows and across them (Manhattan), plus `slack_m`.
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the validators import this module (fabric/model.py), on nodes too: no schema at run time
    from clusterforge.spec.model import Cabling

U_M = 0.04445  # one rack unit, 1.75 in (EIA-310)


class Loc(NamedTuple):
    site: str
    row: int  # 1-based
    rack: str
    u: int  # lowest U the device occupies, 1-based from the bottom
    x: float  # metres along the row
    y: float  # metres across the rows

    @property
    def short(self) -> str:
        return f"{self.rack}U{self.u:02d}"


def run_m(a: Loc, b: Loc, pol: Cabling) -> float:
    """Estimated cable run between two devices, in metres, slack included."""
    if a.rack == b.rack:
        return abs(a.u - b.u) * U_M + pol.slack_m
    up = (pol.rack_units - a.u + pol.rack_units - b.u) * U_M + 2 * pol.tray_rise_m
    return up + abs(a.x - b.x) + abs(a.y - b.y) + pol.slack_m


class _Stack:
    """Switches stacked top down into a sequence of racks that stand side by side."""

    def __init__(
        self, site: str, row: int, first_pos: int, naming: Callable[[int], str], pol: Cabling
    ) -> None:
        self.site, self.row, self.pos, self.naming, self.pol = site, row, first_pos, naming, pol
        self.racks = 0
        self.count = 0
        self.top = 0  # next free U from the top; 0 = no rack opened yet

    def place(self, height: int) -> Loc:
        pol = self.pol
        if self.racks == 0 or self.count >= pol.switches_per_network_rack or self.top - height < 0:
            self.racks += 1
            self.count = 0
            self.top = pol.rack_units
        u = self.top - height + 1
        self.top -= height
        self.count += 1
        pos = self.pos + self.racks - 1
        name = self.naming(self.racks)
        return Loc(self.site, self.row + 1, name, u, pos * pol.rack_width_m, self.row * pol.row_pitch_m)


class SiteLayout:
    """Rack positions and device locations of one plan. Devices are placed by the cabling code through
    `node`, `tor`, `row_end` and `network_row`; each device gets one location, fixed at its first call."""

    def __init__(
        self, site: str, pol: Cabling, rack_names: list[str], rack_nodes: dict[str, list[str]]
    ) -> None:
        self.site, self.pol = site, pol
        per_row = pol.racks_per_row
        self._rack_pos = {name: divmod(i, per_row) for i, name in enumerate(rack_names)}
        self.rows = ceil(len(rack_names) / per_row)
        self._row_len = [min(per_row, len(rack_names) - r * per_row) for r in range(self.rows)]
        self._node_u = {
            n: pol.first_node_u + j * pol.node_height_u
            for nodes in rack_nodes.values()
            for j, n in enumerate(nodes)
        }
        self._node_rack = {n: r for r, nodes in rack_nodes.items() for n in nodes}
        self._row_end: dict[int, _Stack] = {}
        self._core = _Stack(site, self.rows, 0, lambda n: f"ns{n:02d}", pol)
        self._tor_top: dict[str, int] = {}
        self.devices: dict[str, Loc] = {}

    def rack_loc(self, rack: str, u: int) -> Loc:
        row, pos = self._rack_pos[rack]
        pol = self.pol
        return Loc(self.site, row + 1, rack, u, pos * pol.rack_width_m, row * pol.row_pitch_m)

    def node(self, name: str) -> Loc:
        got = self.devices.get(name)
        if got is None:
            got = self.devices[name] = self.rack_loc(self._node_rack[name], self._node_u[name])
        return got

    def row_of(self, node: str) -> int:
        """0-based row of a node's rack."""
        return self._rack_pos[self._node_rack[node]][0]

    def rack_of(self, node: str) -> str:
        return self._node_rack[node]

    def tor(self, name: str, rack: str, height: int) -> Loc:
        """A top-of-rack switch in compute rack `rack`, stacked down from the top U."""
        got = self.devices.get(name)
        if got is None:
            top = self._tor_top.get(rack, self.pol.rack_units)
            self._tor_top[rack] = top - height
            got = self.devices[name] = self.rack_loc(rack, top - height + 1)
        return got

    def row_end(self, name: str, row: int, height: int) -> Loc:
        """A switch in the network racks at the end of 0-based row `row`."""
        got = self.devices.get(name)
        if got is None:
            stack = self._row_end.get(row)
            if stack is None:
                prefix = f"nr{row + 1:02d}"
                stack = _Stack(self.site, row, self._row_len[row], lambda n: prefix + _letters(n), self.pol)
                self._row_end[row] = stack
            got = self.devices[name] = stack.place(height)
        return got

    def network_row(self, name: str, height: int) -> Loc:
        """A switch in the spine/core row after the last compute row."""
        got = self.devices.get(name)
        if got is None:
            got = self.devices[name] = self._core.place(height)
        return got


def _letters(n: int) -> str:
    """1 -> a, 26 -> z, 27 -> aa (spreadsheet column style)."""
    out = ""
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(ord("a") + r) + out
    return out
