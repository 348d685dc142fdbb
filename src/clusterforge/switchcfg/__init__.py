"""Switch QoS rendering from plan.doc: SONiC CONFIG_DB, Cumulus NVUE, InfiniBand SM policy, and the host side.

Pure functions over the plan document; docs/switch-qos.md holds the marking plan and its sources.
"""

from __future__ import annotations

from typing import Any

from clusterforge.switchcfg.ib import ib_qos, render_ib_qos
from clusterforge.switchcfg.nvue import nvue_yaml, render_nvue
from clusterforge.switchcfg.policy import RoceQos, host_qos, roce_qos
from clusterforge.switchcfg.sonic import render_sonic

__all__ = [
    "RoceQos",
    "host_qos",
    "ib_qos",
    "nvue_yaml",
    "render_ib_qos",
    "render_nvue",
    "render_sonic",
    "roce_qos",
    "switch_configs",
]


def switch_configs(plan_doc: dict[str, Any]) -> dict[str, Any]:
    """Per compute fabric: RoCE -> policy, host side and per-switch SONiC/NVUE; InfiniBand -> SM files."""
    out: dict[str, Any] = {}
    for f in plan_doc["fabrics"]:
        name = f["name"]
        if f["type"] == "roce":
            out[name] = {
                "type": "roce",
                "policy": roce_qos(plan_doc, name).as_dict(),
                "host": host_qos(plan_doc),
                "switches": {
                    s[0]: {
                        "sonic_config_db": render_sonic(plan_doc, s[0]),
                        "nvue": render_nvue(plan_doc, s[0]),
                    }
                    for s in f["switches"]
                },
            }
        else:
            out[name] = {
                "type": "infiniband",
                "policy": ib_qos(plan_doc, name),
                "subnet_manager": render_ib_qos(plan_doc, name),
            }
    return out
