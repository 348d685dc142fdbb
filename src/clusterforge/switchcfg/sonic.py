"""SONiC CONFIG_DB QoS fragment for one RoCE switch (load with `sonic-cfggen -j FILE --write-to-db`).

Table and field names follow sonic-buildimage `files/build_templates/qos_config.j2` and sonic-swss
`orchagent/qosorch.h`; see docs/switch-qos.md for the marking plan and why DSCP_TO_TC_MAP|AZURE is rewritten.
"""

from __future__ import annotations

from typing import Any

from clusterforge.switchcfg.policy import (
    DEFAULT_TC,
    PFCWD_DETECTION_MS,
    PFCWD_POLL_MS,
    PFCWD_RESTORATION_MS,
    ROCE_WEIGHT_PERCENT,
    RoceQos,
    roce_qos,
)
from clusterforge.switchcfg.ports import sonic_port, switch_ports

# SONiC's default maps are named AZURE and PORT_QOS_MAP|global points at DSCP_TO_TC_MAP|AZURE, so the
# default map itself is rewritten (all 64 entries) rather than a second map added beside it.
MAP = "AZURE"
WRED = "ROCE_LOSSLESS"
LOSSLESS_PROFILE = "pg_lossless_roce_profile"
SCHED_DEFAULT, SCHED_ROCE, SCHED_CNP = "scheduler.default", "scheduler.roce", "scheduler.cnp"


def dscp_to_tc(q: RoceQos) -> dict[str, str]:
    """All 64 code points: RoCE DSCP -> lossless TC, CNP DSCP -> CNP TC, everything else -> TC0."""
    m = {str(d): str(DEFAULT_TC) for d in range(64)}
    m[str(q.dscp)] = str(q.lossless_tc)
    m[str(q.cnp_dscp)] = str(q.cnp_tc)
    return m


def render_sonic_qos(q: RoceQos, ports: list[str]) -> dict[str, Any]:
    lossless, cnp = str(q.lossless_tc), str(q.cnp_tc)
    identity = {str(i): str(i) for i in range(8)}
    doc: dict[str, Any] = {
        "DSCP_TO_TC_MAP": {MAP: dscp_to_tc(q)},
        "TC_TO_QUEUE_MAP": {MAP: identity},
        "TC_TO_PRIORITY_GROUP_MAP": {
            MAP: {str(i): (lossless if str(i) == lossless else "0") for i in range(8)}
        },
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: identity},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {MAP: {lossless: lossless}},
        "WRED_PROFILE": {
            WRED: {
                "wred_green_enable": "true",
                "wred_yellow_enable": "true",
                "wred_red_enable": "true",
                "ecn": "ecn_all" if q.ecn else "ecn_none",
                **{f"{c}_min_threshold": str(q.ecn_min_bytes) for c in ("green", "yellow", "red")},
                **{f"{c}_max_threshold": str(q.ecn_max_bytes) for c in ("green", "yellow", "red")},
                **{f"{c}_drop_probability": str(q.ecn_probability) for c in ("green", "yellow", "red")},
            }
        },
        "SCHEDULER": {
            SCHED_DEFAULT: {"type": "DWRR", "weight": str(100 - ROCE_WEIGHT_PERCENT)},
            SCHED_ROCE: {"type": "DWRR", "weight": str(ROCE_WEIGHT_PERCENT)},
            SCHED_CNP: {"type": "STRICT"},
        },
        "BUFFER_PROFILE": {
            LOSSLESS_PROFILE: {
                "pool": "ingress_lossless_pool",
                "xon": str(q.pfc_xon_bytes),
                "xoff": str(q.pfc_headroom_bytes),
                "size": str(q.pfc_xon_bytes + q.pfc_headroom_bytes),
                "static_th": str(q.pfc_xoff_threshold_bytes),
            }
        },
        "CABLE_LENGTH": {MAP: {p: f"{q.cable_length_m}m" for p in ports}},
        "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": MAP}},
        "BUFFER_PG": {},
        "QUEUE": {},
    }
    for p in ports:
        doc["PORT_QOS_MAP"][p] = {
            "dscp_to_tc_map": MAP,
            "tc_to_queue_map": MAP,
            "tc_to_pg_map": MAP,
            "pfc_to_queue_map": MAP,
            "pfc_to_pg_map": MAP,
            "pfc_enable": lossless,
            **({"pfcwd_sw_enable": lossless} if q.pfc_watchdog else {}),
        }
        doc["BUFFER_PG"][f"{p}|{lossless}"] = {"profile": LOSSLESS_PROFILE}
        doc["QUEUE"][f"{p}|{DEFAULT_TC}"] = {"scheduler": SCHED_DEFAULT}
        doc["QUEUE"][f"{p}|{lossless}"] = {"scheduler": SCHED_ROCE, "wred_profile": WRED}
        doc["QUEUE"][f"{p}|{cnp}"] = {"scheduler": SCHED_CNP}
    if q.pfc_watchdog:
        doc["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": str(PFCWD_POLL_MS)}}
        for p in ports:
            doc["PFC_WD"][p] = {
                "action": "drop",
                "detection_time": str(PFCWD_DETECTION_MS),
                "restoration_time": str(PFCWD_RESTORATION_MS),
            }
    return doc


def render_sonic(plan_doc: dict[str, Any], switch_name: str) -> dict[str, Any]:
    """CONFIG_DB tables (JSON-ready dict) for switch `switch_name` of a RoCE fabric of the plan."""
    sp = switch_ports(plan_doc, switch_name)
    q = roce_qos(plan_doc, sp.fabric)
    return render_sonic_qos(q, [sonic_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports])
