"""Spec warnings: the management network (what a spec may declare but will not get) and SKUs with
unverified parts.

A warning is a Problem that does not stop the spec from loading (`Spec.warnings`; `clusterforge plan` prints
each one): the plan is still right, because it compiles what the node will actually reach, but the spec
says something the hardware cannot give.

* `fabrics.management.speed_gbps` above a pool SKU's `management_nic.speed_gbps`: Ethernet autonegotiation
  settles on the fastest speed both ends advertise, so such a link runs at the NIC's speed. The plan's
  desired state certifies that lower speed (plan/desired_network.py); the spec's figure still sizes the
  switch ports and optics in the BOM, which is why it is worth a look.
"""

from __future__ import annotations

from clusterforge.spec.checks_net import Bad
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku


def unverified_sku_warnings(c: Cluster, skus: dict[str, Sku], warn: Bad) -> None:
    """One warning per pool whose SKU declares parts no capture of a real node confirms (`Sku.unverified`):
    certification compares the nodes with those values, so a wrong one would fail sound hardware."""
    for i, p in enumerate(c.pools):
        sku = skus.get(p.sku)
        if sku is None or not sku.unverified:
            continue
        warn(
            ("pools", i, "sku"),
            f"a SKU whose every value was taken from a real node; {sku.name} marks these as unverified "
            "(its catalog `sources` say why)",
            ", ".join(sku.unverified),
            "before certifying, check them on one real node (ibdev2netdev, lspci, nvidia-smi topo -m, "
            "lscpu) and declare the corrected SKU inline under `skus:`",
        )


def management_warnings(c: Cluster, skus: dict[str, Sku], warn: Bad) -> None:
    """One warning per SKU whose management NIC is slower than the management network's switch ports."""
    net = c.fabrics.management
    seen: set[str] = set()
    for p in c.pools:
        sku = skus.get(p.sku)
        if sku is None or sku.name in seen:
            continue
        seen.add(sku.name)
        nic = sku.management_nic.speed_gbps
        if net.speed_gbps > nic:
            warn(
                ("fabrics", "management", "speed_gbps"),
                f"at most the {nic} Gb/s of SKU {sku.name}'s management NIC (management_nic.speed_gbps): "
                f"its links negotiate down to {nic} Gb/s, and the nodes are certified at that speed",
                f"{net.speed_gbps} Gb/s switch ports",
                f"set fabrics.management.speed_gbps: {nic} (the BOM then counts {nic} Gb/s ports and "
                "optics), "
                f"or, if the nodes really have {net.speed_gbps} Gb/s management NICs, declare that as the "
                f"SKU's management_nic.speed_gbps (an inline SKU under `skus:`)",
            )
