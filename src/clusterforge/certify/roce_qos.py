"""Reading a netdev's RoCE QoS for certification: trust, PFC priorities, DSCP->priority and ECN, with the
tool the node's RDMA stack applies it with (mlnx_qos on DOCA-OFED, iproute2's dcb on the inbox stack).

Shared by the compute rails' checks (validators/test_rdma.py) and the lossless storage NICs' checks
(validators/test_storage.py), so both read the same commands with the same parsers (clusterforge.hw).
"""

from __future__ import annotations

from typing import Any

from clusterforge.certify.checks import Probe, read_cmd
from clusterforge.hw import dcb, mlnx_qos
from clusterforge.remote.commands import argv, shell


def mlnx_qos_cmd(netdev: str) -> str:
    return argv("mlnx_qos", "-i", netdev)


def dcb_cmds(netdev: str) -> list[str]:
    """PFC, the APP table and (iproute2 6.2+, where the driver has it) the trust order, as JSON."""
    return [
        argv("dcb", "-j", "pfc", "show", "dev", netdev),
        argv("dcb", "-j", "app", "show", "dev", netdev),
        shell("dcb -j apptrust show dev {} 2>/dev/null || true", netdev),
    ]


def qos_cmds(tool: str, netdev: str) -> list[str]:
    return dcb_cmds(netdev) if tool == "dcb" else [mlnx_qos_cmd(netdev)]


def ecn_cmds(netdev: str, prio: int) -> list[str]:
    return [read_cmd(f"/sys/class/net/{netdev}/ecn/roce_{side}/enable/{prio}") for side in ("np", "rp")]


def _prio(qos: mlnx_qos.MlnxQos, dscp: int) -> str:
    try:
        return str(qos.prio_of_dscp(dscp))
    except KeyError:
        return "unmapped"


def read_mlnx(probe: Probe, netdev: str, dscps: list[int]) -> tuple[str, list[int], dict[int, str]]:
    qos = probe.parse(mlnx_qos_cmd(netdev), mlnx_qos.parse)
    return qos.trust_state, list(qos.pfc_priorities), {d: _prio(qos, d) for d in dscps}


def read_dcb(probe: Probe, netdev: str, dscps: list[int]) -> tuple[str, list[int], dict[int, str]]:
    pfc_cmd, app_cmd, trust_cmd = dcb_cmds(netdev)
    pfc = probe.parse(pfc_cmd, dcb.parse_pfc)
    app = probe.parse(app_cmd, dcb.parse_app)
    trust_text = probe.run(trust_cmd)
    if trust_text.strip():
        trust = (dcb.parse_apptrust(trust_text) or ("none",))[0]
    else:  # no `dcb apptrust` (iproute2 < 6.2, or the driver): mlx5 trusts DSCP while it has DSCP APP entries
        trust = "dscp" if app.dscp_prio else "pcp"
    maps = {d: ",".join(map(str, app.prios_of_dscp(d))) or "unmapped" for d in dscps}
    return trust, list(pfc.priorities), maps


def qos_want_found(probe: Probe, tool: str, netdev: str, q: dict[str, Any]) -> tuple[str, str]:
    """(want, found) of ``netdev``'s trust, PFC priorities and DSCP->priority against the compiled ``q``
    (desired.roce_qos) as one comparable line each; a missing tool or unrecognised output: CheckError."""
    want_map = {int(d): str(p) for d, p in sorted(q["dscp2prio"].items(), key=lambda kv: int(kv[0]))}
    read = read_dcb if tool == "dcb" else read_mlnx
    trust, pfc, maps = read(probe, netdev, list(want_map))
    want = f"trust {q['trust']}, PFC on {q['pfc_priorities']}, "
    want += " ".join(f"{d}->{p}" for d, p in want_map.items())
    found = f"trust {trust}, PFC on {pfc}, " + " ".join(f"{d}->{maps[d]}" for d in want_map)
    return want, found


def ecn_want_found(probe: Probe, netdev: str, q: dict[str, Any]) -> tuple[str, str]:
    """(want, found) of the DCQCN notification/reaction point enables on the lossless priority."""
    want = "1" if q["ecn"] else "0"
    np_, rp = (probe.run(c).strip() for c in ecn_cmds(netdev, int(q["lossless_priority"])))
    return f"np={want} rp={want}", f"np={np_} rp={rp}"
