"""The management network validators' registry entries (validators/test_network.py; issue 15)."""

from __future__ import annotations

from clusterforge.checks.model import Check, validator_check

_INSTALLER = (
    "fix the OS installer's network config (netplan/NetworkManager/systemd-networkd) of the management "
    "netdev; clusterforge does not rewrite the network it connects over; then re-certify"
)
_CABLE = "check the cable, transceiver and switch port of the management link; then re-certify"

NETWORK: tuple[Check, ...] = (
    validator_check("network.mgmt_up", "management netdev up", remedies=("service",), fix=_CABLE),
    validator_check("network.mgmt_mtu", "management netdev MTU as declared", fix=_INSTALLER),
    validator_check(
        "network.mgmt_speed",
        "management link at the speed of the slower end (NIC or switch port); never slower",
        remedies=("service",),
        fix=_CABLE,
    ),
    validator_check(
        "network.mgmt_default_route",
        "default route via the declared gateway on the management netdev",
        fix=_INSTALLER,
    ),
)
