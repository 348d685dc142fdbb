"""The passive checks: what the node or its exporters already report, read between jobs (cost `instant`).

Reference keys in `refs` are those of `catalog.REFS`.
"""

from __future__ import annotations

from clusterforge.checks.model import Action, Check, Rule, Severity

DAY, HOUR = 86400.0, 3600.0


def _p(
    cid: str,
    title: str,
    severity: Severity,
    action: Action,
    remedies: tuple[Action, ...] = (),
    rules: tuple[Rule, ...] = (),
    *,
    ticket: str = "",
    fix: str = "",
    refs: tuple[str, ...] = (),
    xids: tuple[int, ...] = (),
) -> Check:
    return Check(
        cid,
        title,
        "passive",
        severity,
        "passive",
        "instant",
        action,
        remedies,
        rules,
        ticket=ticket,
        fix=fix,
        refs=refs,
        xids=xids,
    )


_SAME_TWICE = Rule(
    2,
    DAY,
    "service",
    ticket="hardware",
    why="the same fatal Xid twice in 24 h on one GPU: a reset did not hold",
)

PASSIVE: tuple[Check, ...] = (
    _p(
        "passive.xid.79",
        "GPU fell off the bus (Xid 79)",
        "critical",
        "drain",
        ("reboot", "service"),
        (_SAME_TWICE,),
        fix="reboot (a GPU off the bus cannot be reset in place); a repeat is a hardware service",
        refs=("gpud", "xid-policy", "nvsentinel"),
        xids=(79,),
    ),
    _p(
        "passive.xid.48",
        "double-bit ECC error (Xid 48)",
        "critical",
        "drain",
        ("reset_gpu", "service"),
        (_SAME_TWICE,),
        refs=("nv-hv-xid", "xid-policy", "nvsentinel"),
        xids=(48,),
    ),
    _p(
        "passive.xid.64",
        "row remap / page retirement failure (Xid 64)",
        "critical",
        "drain",
        ("service",),
        ticket="hardware",
        fix="the GPU has no spare rows left: hardware service",
        refs=("gpud", "xid-policy"),
        xids=(64,),
    ),
    _p(
        "passive.xid.fatal",
        "fatal Xid (class fatal in xid_policy.yaml, and any Xid it does not list)",
        "critical",
        "drain",
        ("reset_gpu", "service"),
        (_SAME_TWICE,),
        refs=("xid-policy", "nv-hv-xid", "nvsentinel"),
    ),
    _p(
        "passive.xid.warn",
        "Xid of class warn (the state behind it is gated by its own check)",
        "minor",
        "alert",
        (),
        (
            Rule(
                3, DAY, "drain", why="3 in 24 h on one GPU: look before the next job lands", scope="component"
            ),
        ),
        refs=("xid-policy", "own"),
    ),
    _p(
        "passive.xid.application",
        "Xid raised by a user program (the GPU stays healthy)",
        "info",
        "ignore",
        (),
        (Rule(20, HOUR, "alert", why="a storm of application Xids on one GPU", scope="component"),),
        refs=("xid-policy", "own"),
    ),
    _p(
        "passive.gpu_lost",
        "fewer GPUs visible than declared (GPU lost / off the bus without an Xid line)",
        "critical",
        "drain",
        ("reboot", "service"),
        (Rule(2, DAY, "service", ticket="hardware", why="lost twice in 24 h"),),
        refs=("gpud",),
    ),
    _p(
        "passive.row_remap_pending",
        "a GPU has a row remap pending (DCGM_FI_DEV_ROW_REMAP_PENDING)",
        "major",
        "drain",
        ("reset_gpu",),
        (Rule(3, 30 * DAY, "service", ticket="hardware", why="remaps keep coming on one GPU"),),
        fix="reset the GPU when idle to apply the remap",
        refs=("gpud", "dcgm-fields", "own"),
    ),
    _p(
        "passive.row_remap_failure",
        "row remapping failed (DCGM_FI_DEV_ROW_REMAP_FAILURE)",
        "critical",
        "drain",
        ("service",),
        ticket="hardware",
        refs=("gpud", "dcgm-fields"),
    ),
    _p(
        "passive.ecc_uncorrectable",
        "uncorrectable (double-bit) ECC errors counted",
        "critical",
        "drain",
        ("reset_gpu", "service"),
        (_SAME_TWICE,),
        refs=("nv-hv-xid",),
    ),
    _p(
        "passive.nvlink_errors",
        "NVLink CRC / replay / recovery errors growing",
        "major",
        "alert",
        ("reset_gpu", "service"),
        (Rule(3, HOUR, "drain", why="errors keep growing on one GPU's links", scope="component"),),
        refs=("own",),
    ),
    _p(
        "passive.fabric_manager",
        "NVIDIA fabric manager not running on an NVSwitch node",
        "critical",
        "drain",
        ("reboot",),
        fix="restart nvidia-fabricmanager; reboot if it does not come back",
    ),
    _p(
        "passive.rail_link_down",
        "a rail link is down",
        "critical",
        "drain",
        ("service",),
        ticket="cable",
        fix="check the cable, transceiver and switch port",
    ),
    _p(
        "passive.rail_link_flap",
        "a rail link changed carrier state",
        "major",
        "alert",
        (),
        (
            Rule(
                3,
                HOUR,
                "drain",
                ticket="cable",
                why="a link that flaps 3 times in an hour breaks collectives: reseat or replace the cable",
            ),
        ),
        refs=("nvsentinel", "own"),
    ),
    _p(
        "passive.pfc_pause_storm",
        "PFC pause frames on the lossless priority far above normal",
        "major",
        "alert",
        (),
        (Rule(3, HOUR, "drain", scope="node", ticket="network", why="a sustained pause storm"),),
        fix="find the congested or stuck receiver (NIC or switch port); check the QoS settings",
        refs=("own",),
    ),
    _p(
        "passive.certificate_expiring",
        "the node's certificate expires within 7 days",
        "minor",
        "alert",
        fix="re-certify the node (`clusterforge certify SPEC --limit NODE`)",
    ),
    _p(
        "passive.certificate_expired",
        "the node's certificate has expired or is missing",
        "major",
        "drain",
        fix="re-certify the node (`clusterforge certify SPEC --limit NODE`)",
    ),
    _p(
        "passive.drift",
        "the node no longer matches the declared cluster (`clusterforge drift`)",
        "major",
        "drain",
        fix="`clusterforge drift --fix` (re-provision and re-certify)",
    ),
)

#: the passive checks the node-side health check (`clusterforge.health.nodecheck`) runs; between two
#: decisions of the same action the earlier here names the drain (the Xid says more than the GPU count it
#: caused)
NODE_CHECKS = (
    "passive.xid.79",
    "passive.xid.48",
    "passive.xid.64",
    "passive.xid.fatal",
    "passive.row_remap_failure",
    "passive.gpu_lost",
    "passive.fabric_manager",
    "passive.rail_link_down",
    "passive.row_remap_pending",
    "passive.rail_link_flap",
    "passive.certificate_expired",
    "passive.xid.warn",
    "passive.xid.application",
    "passive.certificate_expiring",
)
