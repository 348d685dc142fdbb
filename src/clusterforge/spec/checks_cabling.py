"""Cabling-policy rules: nodes and ToR switches fit the rack, the switches named for management, BMC and
storage are in the network catalog at the speeds the spec asks, and known fabric switches have the ports."""

from __future__ import annotations

from clusterforge.spec.checks_net import Bad
from clusterforge.spec.model import Cluster
from clusterforge.spec.netcatalog import switch_models

BMC_SPEED_GBPS = 1  # a BMC's dedicated port is 1000BASE-T


def cabling_checks(c: Cluster, bad: Bad) -> None:
    pol = c.site.cabling
    models = switch_models()
    path = ("site", "cabling")
    needs = [("management_switch", pol.management_switch, c.fabrics.management.speed_gbps)]
    needs.append(("bmc_switch", pol.bmc_switch, BMC_SPEED_GBPS))
    if c.fabrics.storage is not None:
        needs.append(("storage_switch", pol.storage_switch, c.fabrics.storage.speed_gbps))
    for key, model, speed in needs:
        sw = models.get(model)
        if sw is None:
            bad(
                (*path, key),
                f"a switch model of the network catalog ({', '.join(sorted(models))})",
                repr(model),
                "name one of those, or add the model to clusterforge/spec/catalog/network/switches.yaml",
            )
        elif speed not in sw.ports_per_cage:
            bad(
                (*path, key),
                f"a switch with {speed}G ports ({model} has {sorted(sw.ports_per_cage)} G)",
                model,
                "choose a switch model for that speed",
            )
    tor_u = sum(models[m].rack_units for m in (pol.management_switch, pol.bmc_switch) if m in models)
    racks = c.site.racks
    used = pol.first_node_u - 1 + racks.nodes_per_rack * pol.node_height_u + tor_u
    if used > pol.rack_units:
        bad(
            (*path, "rack_units"),
            f"{racks.nodes_per_rack} nodes of {pol.node_height_u}U from U{pol.first_node_u} "
            f"and {tor_u}U of ToR switches within the rack",
            f"{used}U needed, {pol.rack_units}U in a rack",
            "lower site.racks.nodes_per_rack, or set site.cabling.node_height_u / rack_units as built",
        )
    for fi, fab in enumerate(c.fabrics.compute):
        sw = models.get(fab.switch.model)
        per = sw.ports_per_cage.get(fab.switch.port_speed_gbps, 0) if sw else 0
        if sw and per and fab.switch.radix > sw.cages * per:
            bad(
                ("fabrics", "compute", fi, "switch", "radix"),
                f"at most {sw.cages * per} ports: {fab.switch.model} has {sw.cages} cages of "
                f"{per} x {fab.switch.port_speed_gbps}G",
                str(fab.switch.radix),
                "lower the radix to the switch's port count",
            )
