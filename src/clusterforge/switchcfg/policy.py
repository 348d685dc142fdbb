"""The RoCE QoS policy of a plan: one set of numbers that both the hosts and the switches are rendered from.

The host's markings (trust, PFC, DSCPs, priorities, ToS, ECN, MTU) are not derived here: they are taken
from `plan.desired.roce_qos` / `netdev_mtu`, the one computation that also gives every RoCE rail of every
node its desired state, so a host role and a switch rendered from the same plan cannot disagree on a
priority or a DSCP value. Only the switch's own numbers (buffers, ECN thresholds, watchdog) are computed
here, from those markings and the port speed. Sources and the reasoning behind each number:
docs/switch-qos.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clusterforge.plan.desired import netdev_mtu
from clusterforge.plan.desired import roce_qos as rail_qos

# Cumulus Linux / Onyx RoCE defaults: ECN on TC3 from 150 000 B (min) to 1 500 000 B (max), probability 100 %.
ECN_MIN_BYTES = 150_000
ECN_MAX_BYTES = 1_500_000
ECN_PROBABILITY = 100
# Derived (docs/switch-qos.md, "Buffer thresholds"): time senders get to react to ECN marks before PFC fires.
ECN_REACTION_BUDGET_US = 20
CABLE_LENGTH_M = 100  # assumed longest DAC/AOC run; sizes the PFC headroom (no cable lengths in the plan)
MAX_FRAME_BYTES = 9216  # largest frame a Spectrum port accepts; the headroom must hold two of them
PFC_RESPONSE_US = 1.0  # allowance for the link partner to stop after XOFF (PHY/MAC delay), assumption
PROPAGATION_NS_PER_M = 5  # light in fibre/copper, ~5 ns per metre
ROCE_WEIGHT_PERCENT = 50  # DWRR share of the RoCE TC; the other 50 % go to TC0 (Cumulus default ETS)
PFCWD_DETECTION_MS = 200  # SONiC pfcwd defaults
PFCWD_RESTORATION_MS = 200
PFCWD_POLL_MS = 200
NVUE_PFCWD_POLL_MS = 100  # Cumulus defaults: polling interval 100 ms, robustness 3
NVUE_PFCWD_ROBUSTNESS = 3
DEFAULT_TC = 0  # every other DSCP/switch priority lands on TC0 (Cumulus RoCE default "other traffic")


@dataclass(frozen=True)
class RoceQos:
    """The marking plan and the switch buffer numbers (bytes) for one RoCE fabric."""

    fabric: str
    port_speed_gbps: int
    lossless_priority: int
    dscp: int
    cnp_dscp: int
    cnp_priority: int
    tos: int
    mtu: int
    ecn: bool
    pfc_watchdog: bool
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_probability: int
    pfc_xoff_threshold_bytes: int  # PG occupancy at which XOFF is sent (pause trigger)
    pfc_xon_bytes: int
    pfc_headroom_bytes: int  # absorbs what is still in flight after XOFF
    cable_length_m: int

    @property
    def lossless_tc(self) -> int:
        return (
            self.lossless_priority
        )  # switch priority N -> traffic class N (Cumulus default, SONiC identity map)

    @property
    def cnp_tc(self) -> int:
        return self.cnp_priority

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bytes_per_us(gbps: int) -> float:
    return gbps * 1000 / 8  # Gbit/s -> bytes per microsecond


def headroom_bytes(gbps: int, cable_m: int = CABLE_LENGTH_M) -> int:
    """Bytes that still arrive after XOFF: a cable round trip, the partner's response, two frames."""
    rtt_us = 2 * cable_m * PROPAGATION_NS_PER_M / 1000
    return int(_bytes_per_us(gbps) * (rtt_us + PFC_RESPONSE_US)) + 2 * MAX_FRAME_BYTES


def roce_qos(plan_doc: dict[str, Any], fabric: str) -> RoceQos:
    """The policy of RoCE fabric `fabric` of a plan; ValueError for an unknown or non-RoCE fabric."""
    f = fabric_doc(plan_doc, fabric)
    if f["type"] != "roce":
        raise ValueError(
            f"fabric {fabric!r} is {f['type']}, not roce: it has no Ethernet QoS (see render_ib_qos)"
        )
    host = host_qos(plan_doc)
    if host["cnp_priority"] == host["lossless_priority"]:
        raise ValueError(
            "tuning.roce.cnp_priority must differ from lossless_priority (CNP must not be paused)"
        )
    if host["cnp_dscp"] == host["dscp"]:
        raise ValueError("tuning.roce.cnp_dscp must differ from dscp")
    if DEFAULT_TC in (host["lossless_priority"], host["cnp_priority"]):
        raise ValueError(f"priority {DEFAULT_TC} carries all other traffic; pick another RoCE/CNP priority")
    gbps = int(f["port_speed_gbps"])
    xoff = ECN_MAX_BYTES + int(_bytes_per_us(gbps) * ECN_REACTION_BUDGET_US)
    return RoceQos(
        fabric=fabric,
        port_speed_gbps=gbps,
        lossless_priority=host["lossless_priority"],
        dscp=host["dscp"],
        cnp_dscp=host["cnp_dscp"],
        cnp_priority=host["cnp_priority"],
        tos=host["tos"],
        mtu=host["mtu"],
        ecn=host["ecn"],
        pfc_watchdog=bool(plan_doc["tuning"]["roce"].get("pfc_watchdog", True)),
        ecn_min_bytes=ECN_MIN_BYTES,
        ecn_max_bytes=ECN_MAX_BYTES,
        ecn_probability=ECN_PROBABILITY,
        pfc_xoff_threshold_bytes=xoff,
        pfc_xon_bytes=2 * MAX_FRAME_BYTES,
        pfc_headroom_bytes=headroom_bytes(gbps),
        cable_length_m=CABLE_LENGTH_M,
    )


def fabric_doc(plan_doc: dict[str, Any], fabric: str) -> dict[str, Any]:
    for f in plan_doc["fabrics"]:
        if f["name"] == fabric:
            return dict(f)
    raise ValueError(f"no fabric {fabric!r} in plan {plan_doc.get('cluster')!r}")


def host_qos(plan_doc: dict[str, Any]) -> dict[str, Any]:
    """What every RoCE host is configured with: the QoS of a RoCE rail in the nodes' compiled desired state
    (`plan.desired.roce_qos`, what the rdma role applies and the validators certify) and its netdev MTU,
    under the keys the switch renderers and the Pulumi stack output use.

    `trust`/`pfc_priorities`/`dscp_to_priority` are what `mlnx_qos --trust dscp --pfc ...` and
    `dcb app add ... dscp-prio` set; `tos` is RDMA-CM's default ToS and NCCL_IB_TC.
    """
    tuning = plan_doc["tuning"]
    q = rail_qos(tuning)
    return {
        "trust": q["trust"],
        "pfc_priorities": q["pfc_priorities"],
        "pfc_vector": q["pfc_vector"],  # mlnx_qos --pfc 0,0,0,1,0,0,0,0
        "dscp": q["dscp"],
        "lossless_priority": q["lossless_priority"],
        "cnp_dscp": q["cnp_dscp"],
        "cnp_priority": q["cnp_priority"],
        "dscp_to_priority": q["dscp2prio"],  # JSON/Pulumi: string keys
        "tos": q["tos"],
        "ecn": q["ecn"],
        "mtu": netdev_mtu("Ethernet", tuning),
    }
