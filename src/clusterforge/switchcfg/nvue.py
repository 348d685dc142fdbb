"""Cumulus Linux NVUE configuration (the `nv set qos ...` tree) for one RoCE switch.

`render_nvue` returns `{"set": {...}}`; `nvue_yaml` writes it as the one-element list that
`nv config patch FILE` reads (the format `nv config show -o yaml` prints). Keys follow the Cumulus Linux 5.x
NVUE reference (qos roce, mapping, pfc, congestion-control, egress-queue-mapping, egress-scheduler,
pfc-watchdog); docs/switch-qos.md lists the `nv set` commands each key stands for.
"""

from __future__ import annotations

from typing import Any

import yaml

from clusterforge.switchcfg.policy import (
    DEFAULT_TC,
    NVUE_PFCWD_POLL_MS,
    NVUE_PFCWD_ROBUSTNESS,
    ROCE_WEIGHT_PERCENT,
    RoceQos,
    roce_qos,
)
from clusterforge.switchcfg.ports import cumulus_port, switch_ports

PROFILE = "default-global"


def render_nvue_qos(q: RoceQos, ports: list[str]) -> dict[str, Any]:
    lossless, cnp = str(q.lossless_tc), str(q.cnp_tc)
    qos: dict[str, Any] = {
        # `nv set qos roce mode lossless`: trust, SP->TC, ETS, ECN, PFC prio 3, lossless pool in one go;
        # the explicit keys below pin every value we rely on so a changed NVUE default cannot move them.
        "roce": {"enable": "on", "mode": "lossless"},
        "mapping": {
            PROFILE: {
                "trust": "l3",
                "dscp": {
                    str(q.dscp): {"switch-priority": q.lossless_priority},
                    str(q.cnp_dscp): {"switch-priority": q.cnp_priority},
                },
            }
        },
        "pfc": {
            PROFILE: {
                "switch-priority": {str(q.lossless_priority): {}},
                "tx": "enable",
                "rx": "enable",
                "cable-length": q.cable_length_m,
            }
        },
        "congestion-control": {
            PROFILE: {
                "traffic-class": {
                    lossless: {
                        "ecn": "enable" if q.ecn else "disable",
                        "red": "disable",
                        "min-threshold": q.ecn_min_bytes,
                        "max-threshold": q.ecn_max_bytes,
                        "probability": q.ecn_probability,
                    }
                }
            }
        },
        "egress-queue-mapping": {
            PROFILE: {
                "switch-priority": {
                    str(q.lossless_priority): {"traffic-class": q.lossless_tc},
                    str(q.cnp_priority): {"traffic-class": q.cnp_tc},
                }
            }
        },
        "egress-scheduler": {
            PROFILE: {
                "traffic-class": {
                    str(DEFAULT_TC): {"mode": "dwrr", "bw-percent": 100 - ROCE_WEIGHT_PERCENT},
                    lossless: {"mode": "dwrr", "bw-percent": ROCE_WEIGHT_PERCENT},
                    cnp: {"mode": "strict"},
                }
            }
        },
    }
    doc: dict[str, Any] = {"qos": qos}
    if q.pfc_watchdog:
        qos["pfc-watchdog"] = {"polling-interval": NVUE_PFCWD_POLL_MS, "robustness": NVUE_PFCWD_ROBUSTNESS}
        doc["interface"] = {p: {"qos": {"pfc-watchdog": {"state": "enable"}}} for p in ports}
    return {"set": doc}


def render_nvue(plan_doc: dict[str, Any], switch_name: str) -> dict[str, Any]:
    """NVUE `set` tree for switch `switch_name` of a RoCE fabric of the plan."""
    sp = switch_ports(plan_doc, switch_name)
    q = roce_qos(plan_doc, sp.fabric)
    return render_nvue_qos(q, [cumulus_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports])


def nvue_yaml(doc: dict[str, Any]) -> str:
    """Text for `nv config patch FILE`."""
    return yaml.safe_dump([doc], sort_keys=False, default_flow_style=False)
