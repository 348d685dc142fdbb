"""The physical cabling sheet of a plan: every cable with an ID, a label, both ends located (site, row, rack,
U, device, port in the device's own naming), its media, length class and optics (docs/fabric.md).

Pure and deterministic: the same plan gives the same sheet. IDs are `<network>-<seq>`, numbered in the
plan's link order (compute fabrics: `<fabric>-nl-` node-leaf, `-ls-` leaf-spine, `-sc-` spine-core; then
`mgmt-`, `bmc-`, `stor-`). The legs of one splitter cable, or of one 800G switch-to-switch cable, share an
`assembly_id` (the ID of its first leg); a fibre carries one leg (straight) or two (1:2 splitter).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from clusterforge.errors import InputError
from clusterforge.plan.build import Plan
from clusterforge.plan.cabling_media import Cable, GroupEnds, Leg, assign_group
from clusterforge.plan.desired_fabric import nth_netdev
from clusterforge.plan.site_layout import Loc, SiteLayout
from clusterforge.spec.checks_cabling import BMC_SPEED_GBPS
from clusterforge.spec.layout import rack_name
from clusterforge.spec.netcatalog import Family, PortNaming, Shape, family_for, switch_models

KIND_CODE = {"node-leaf": "nl", "leaf-spine": "ls", "spine-core": "sc"}
CSV_FIELDS = (
    *("fabric", "kind", "a_device", "a_port", "b_device", "b_port", "speed_gbps", "cable_id", "assembly_id"),
    *("a_site", "a_row", "a_rack", "a_u", "a_port_name", "a_cage"),
    *("b_site", "b_row", "b_rack", "b_u", "b_port_name", "b_cage"),
    *("media", "cable_type", "cable_part", "length_m", "length_estimate_m", "a_optic", "b_optic", "label"),
)


class SwitchUnit(NamedTuple):
    name: str
    model: str
    network: str  # compute fabric name, mgmt, bmc or storage
    role: str  # leaf, spine, core, tor
    loc: Loc


class RailCable(NamedTuple):
    """What a node's rail must be cabled to (the per-node cabling check of the fabric issue uses these)."""

    rail: int
    cable_id: str
    hca: str
    node_port: str  # netdev
    node_location: Loc
    switch: str
    switch_port: int  # the plan's 1-based port; on InfiniBand the IB port number
    switch_port_name: str  # in the switch OS's own naming
    switch_location: Loc
    speed_gbps: int


@dataclass
class CableSheet:
    cables: list[Cable]
    switches: list[SwitchUnit]
    _rails: dict[str, list[RailCable]] = field(default_factory=dict, repr=False)

    def node_rails(self, node: str) -> list[RailCable]:
        """Each compute rail of `node`, in rail order, with its expected cable; KeyError if unknown."""
        if not self._rails:
            for c in self.cables:
                if c.kind == "node-leaf":
                    rc = RailCable(
                        c.a_port,
                        c.cable_id,
                        "",
                        c.a_port_name,
                        c.a,
                        c.b_device,
                        c.b_port,
                        c.b_port_name,
                        c.b,
                        c.speed_gbps,
                    )
                    self._rails.setdefault(c.a_device, []).append(rc)
        return list(self._rails[node])


def node_rails(plan: Plan, node: str, sheet: CableSheet | None = None) -> list[RailCable]:
    """The expected cable of every rail of `node`, with the HCA name from the plan. Building the sheet costs
    as much as `cable_sheet(plan)`: pass one in when asking about many nodes."""
    sheet = sheet or cable_sheet(plan)
    hcas = {r["index"]: r["hca"] for r in plan.node(node)["rails"]}
    return [r._replace(hca=hcas[r.rail]) for r in sheet.node_rails(node)]


class _Builder:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        c = plan.spec.cluster
        self.pol = c.site.cabling
        racks = [rack_name(c, r) for r in range(c.site.racks.count)]
        rack_nodes = {r["name"]: list(r["nodes"]) for r in plan.doc["racks"]}
        self.layout = SiteLayout(c.site.name, self.pol, racks, rack_nodes)
        self.models = switch_models()
        self.switches: list[SwitchUnit] = []
        self.legs: list[Leg] = []
        self.groups: dict[tuple[str, int, str], GroupEnds] = {}

    def _height(self, model: str) -> int:
        sw = self.models.get(model)
        return sw.rack_units if sw else 1

    def _unit(self, name: str, model: str, network: str, role: str, loc: Loc) -> Loc:
        self.switches.append(SwitchUnit(name, model, network, role, loc))
        return loc

    @staticmethod
    def _ids(prefix: str, count: int) -> Iterator[str]:
        w = max(4, len(str(count)))
        return (f"{prefix}-{i:0{w}d}" for i in range(1, count + 1))

    def compute(self) -> None:
        nic = self.pol.compute_nic_connector
        doc_nodes = {n["name"]: n for n in self.plan.doc["nodes"]}
        for f in self.plan.fabrics.values():
            speed, h = f.port_speed_gbps, self._height(f.switch_model)
            sp = PortNaming(f.switch_model, speed)
            node_loc = self.layout.node
            loc: dict[str, Loc] = {}
            for leaves in f.failure_domains.su_leaves:
                row = self.layout.row_of(f.failure_domains.leaf_nodes[leaves[0]][0])
                for leaf in leaves:
                    loc[leaf] = self._unit(
                        leaf, f.switch_model, f.name, "leaf", self.layout.row_end(leaf, row, h)
                    )
            for s in f.switches:
                if s.role != "leaf":
                    loc[s.name] = self._unit(
                        s.name, f.switch_model, f.name, s.role, self.layout.network_row(s.name, h)
                    )
            counts = Counter(map(itemgetter(0), f.links))
            ids = {k: self._ids(f"{f.name}-{code}", counts[k]) for k, code in KIND_CODE.items()}
            netdevs: dict[str, list[str]] = {}
            split = family_for(speed, sp.connector, nic, "split") if sp.per_cage > 1 else None
            occupancy: Counter[tuple[str, int | None]] = Counter()
            uplinks: dict[tuple[str, int, str], GroupEnds] = {}
            for kind, a, ap, b, bp, _ in f.links:
                br = sp.ref(bp)
                if kind == "node-leaf":
                    names = netdevs.get(a)
                    if names is None:
                        names = netdevs[a] = [r["netdev"] for r in doc_nodes[a]["rails"]]
                    leg = Leg(f.name, kind, a, ap, names[ap], None, node_loc(a), b, bp, br.name, br.cage,
                              loc[b], speed, next(ids[kind]))  # fmt: skip
                    self._group((b, br.cage, "down"), leg, split, "b")
                else:
                    ar = sp.ref(ap)
                    leg = Leg(f.name, kind, a, ap, ar.name, ar.cage, loc[a], b, bp, br.name, br.cage, loc[b],
                              speed, next(ids[kind]))  # fmt: skip
                    occupancy[(b, br.cage)] += 1
                    key = (a, ar.cage, "up")
                    uplinks[key] = self._group(key, leg, None, "a")
                self.legs.append(leg)
            # a switch-to-switch cage is one 800G cable when all its legs go to one cage that has no other
            # legs ("straight"); otherwise each leg is a fibre between two transceivers ("fanout")
            straight = family_for(speed, sp.connector, sp.connector, "straight")
            fanout = family_for(speed, sp.connector, sp.connector, "fanout")
            for g in uplinks.values():
                ends = {(x.b_dev, x.b_cage) for x in g.legs}
                whole = len(g.legs) == sp.per_cage and len(ends) == 1 and occupancy[ends.pop()] == len(g.legs)
                g.family = straight if whole else fanout

    def _group(
        self, key: tuple[str, int, str], leg: Leg, family: Family | None, switch_end: str
    ) -> GroupEnds:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = GroupEnds([], family, switch_end)
        g.legs.append(leg)
        return g

    def _node_network(
        self,
        network: str,
        kind: str,
        prefix: str,
        speed: int,
        model: str,
        nics: int,
        nic_name: Callable[[dict[str, Any], int], str],
        nic_connector: str,
        placement: str,
    ) -> None:
        """Cable `nics` NICs of every node to switches of `model`, ToR per rack or storage leaves per row."""
        sp = PortNaming(model, speed)
        per_switch = sp.max_ports if sp.known else 48
        if placement == "storage":
            per_switch = max(per_switch // 2 // nics * nics, nics)  # half the ports face the nodes
        shape: Shape = "split" if sp.per_cage > 1 else "single"
        family = family_for(speed, sp.connector, nic_connector, shape)
        h = self._height(model)
        legs: list[Leg] = []
        nodes = self.plan.doc["nodes"]
        ids = self._ids(prefix, len(nodes) * nics)
        slot: dict[str, int] = {}
        for n in nodes:
            if placement == "tor":
                rack = self.layout.rack_of(n["name"])
                group, idx = rack, slot.get(rack, 0)
                slot[rack] = idx + 1
            else:
                group, idx = "storage", slot.get("storage", 0)
                slot["storage"] = idx + 1
            for i in range(nics):
                port_idx = idx * nics + i
                t, p = divmod(port_idx, per_switch)
                if placement == "tor":
                    sw = f"{group}-{network}{t}"
                    sw_loc = self.layout.devices.get(sw) or self._unit(
                        sw, model, network, "tor", self.layout.tor(sw, group, h)
                    )
                else:
                    sw = f"stor-leaf-{t:02d}"
                    sw_loc = self.layout.devices.get(sw) or self._unit(
                        sw, model, network, "leaf", self.layout.row_end(sw, self.layout.row_of(n["name"]), h)
                    )
                ref = sp.ref(p + 1)
                leg = Leg(
                    network,
                    kind,
                    n["name"],
                    i,
                    nic_name(n, i),
                    None,
                    self.layout.node(n["name"]),
                    sw,
                    p + 1,
                    ref.name,
                    ref.cage,
                    sw_loc,
                    speed,
                    next(ids),
                )
                self._group((sw, ref.cage if shape == "split" else p + 1, "down"), leg, family, "b")
                legs.append(leg)
        self.legs.extend(legs)

    def others(self) -> None:
        c, pol = self.plan.spec.cluster, self.pol
        mg = c.fabrics.management
        skus = self.plan.doc["skus"]
        self._node_network(
            "mgmt",
            "node-mgmt",
            "mgmt",
            mg.speed_gbps,
            pol.management_switch,
            mg.nics_per_node,
            lambda n, i: nth_netdev(n["mgmt_netdev"], i),
            "rj45" if mg.speed_gbps <= 1 else "sfp28",
            "tor",
        )
        self._node_network(
            "bmc", "node-bmc", "bmc", BMC_SPEED_GBPS, pol.bmc_switch, 1, lambda n, i: "bmc", "rj45", "tor"
        )
        st = c.fabrics.storage
        if st is not None and st.nics_per_node:
            self._node_network(
                "storage",
                "node-storage",
                "stor",
                st.speed_gbps,
                pol.storage_switch,
                st.nics_per_node,
                lambda n, i: nth_netdev(skus[n["sku"]]["storage_nics"]["netdev"], i),
                pol.storage_nic_connector,
                "storage",
            )

    def cables(self) -> list[Cable]:
        out: dict[int, Cable] = {}
        problems = []
        for g in self.groups.values():
            try:
                for leg, cable in assign_group(g, self.pol):
                    out[id(leg)] = cable
            except ValueError as exc:
                problems.append(
                    self.plan.spec.problem(
                        ("site", "cabling"),
                        "a cable or optic that reaches every run (docs/fabric.md, media rules)",
                        str(exc),
                        "shorten the rows (racks_per_row), move the network racks closer, or add media to "
                        "clusterforge/spec/catalog/network/media.yaml",
                    )
                )
        if problems:
            shown = f"; the first 5 of {len(problems)} shown" if len(problems) > 5 else ""
            raise InputError(problems[:5], f"cabling of {self.plan.spec.file}{shown}")
        return [out[id(leg)] for leg in self.legs]


def cable_sheet(plan: Plan) -> CableSheet:
    """Every cable of `plan` (compute fabrics, then management, BMC and storage), located and priced."""
    b = _Builder(plan)
    b.compute()
    b.others()
    return CableSheet(b.cables(), b.switches)


def csv_rows(sheet: CableSheet) -> Iterator[tuple[Any, ...]]:
    return (c.csv_row() for c in sheet.cables)


__all__ = ["CSV_FIELDS", "Cable", "CableSheet", "RailCable", "SwitchUnit", "cable_sheet", "node_rails"]
