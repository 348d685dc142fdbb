"""InfiniBand QoS: the subnet manager's SL->VL mapping and VL arbitration for a compute fabric.

InfiniBand is lossless by credit-based link flow control, so there is no PFC, ECN or DSCP to set; QoS is the
SL a flow carries (NCCL sets it from NCCL_IB_SL, default 0), the SL->VL table and the VL arbitration weights,
all programmed by the SM. Option names follow OpenSM's `doc/QoS_management_in_OpenSM.txt`; UFM's SM reads the
same options from its own opensm.conf (docs/switch-qos.md).
"""

from __future__ import annotations

from typing import Any

from clusterforge.switchcfg.policy import fabric_doc

COMPUTE_SL = 0  # NCCL_IB_SL default (NCCL connect.cc: -1 -> 0): collectives ride SL0 unless told otherwise
IPOIB_SL = 1  # IPoIB and other path-record consumers (management, storage over IPoIB)
COMPUTE_VL, OTHER_VL = 0, 1
COMPUTE_WEIGHT, OTHER_WEIGHT = 192, 64  # 64-byte credits: 3 vs 1 packets of 4 KB MTU per arbitration turn


def ib_qos(plan_doc: dict[str, Any], fabric: str) -> dict[str, Any]:
    f = fabric_doc(plan_doc, fabric)
    if f["type"] != "infiniband":
        raise ValueError(f"fabric {fabric!r} is {f['type']}, not infiniband")
    sl2vl = [COMPUTE_VL if sl == COMPUTE_SL else OTHER_VL for sl in range(16)]
    return {
        "fabric": fabric,
        "compute_sl": COMPUTE_SL,
        "ipoib_sl": IPOIB_SL,
        "max_vls": 2,
        "sl2vl": sl2vl,
        "vlarb_low": {str(COMPUTE_VL): COMPUTE_WEIGHT, str(OTHER_VL): OTHER_WEIGHT},
        "nccl_ib_sl": COMPUTE_SL,
    }


def render_ib_qos(plan_doc: dict[str, Any], fabric: str) -> dict[str, str]:
    """{"opensm.conf": QoS options for the SM's options file, "qos-policy.conf": the policy file}."""
    q = ib_qos(plan_doc, fabric)
    sl2vl = ",".join(str(v) for v in q["sl2vl"])
    low = ",".join(f"{vl}:{w}" for vl, w in q["vlarb_low"].items())
    high = ",".join(f"{vl}:0" for vl in q["vlarb_low"])
    lines = [
        f"# clusterforge: QoS for InfiniBand fabric {fabric} (cluster {plan_doc['cluster']},"
        f" plan {plan_doc['plan_hash'][:12]})",
        "qos TRUE",
        f"qos_max_vls {q['max_vls']}",
    ]
    for prefix in ("qos_ca", "qos_swe", "qos_sw0", "qos_rtr"):
        lines += [
            f"{prefix}_max_vls {q['max_vls']}",
            f"{prefix}_high_limit 0",
            f"{prefix}_vlarb_high {high}",
            f"{prefix}_vlarb_low {low}",
            f"{prefix}_sl2vl {sl2vl}",
        ]
    policy = "\n".join(
        [
            f"# clusterforge: path-record SLs for fabric {fabric}; "
            f"NCCL picks its SL itself (NCCL_IB_SL={COMPUTE_SL})",
            "qos-levels",
            "    qos-level",
            "        name: DEFAULT",
            "        use: compute (NCCL) and any query no rule matches",
            f"        sl: {COMPUTE_SL}",
            "    end-qos-level",
            "end-qos-levels",
            "qos-ulps",
            f"    default : {COMPUTE_SL}",
            f"    ipoib   : {IPOIB_SL}",
            "end-qos-ulps",
        ]
    )
    return {"opensm.conf": "\n".join(lines) + "\n", "qos-policy.conf": policy + "\n"}
