"""A SONiC RoCE switch's running state read back and compared with what `render_sonic` gives it (the plan's
QoS policy, switchcfg/policy.py, the same numbers the hosts' desired `roce qos` comes from).

Inputs are the parsed outputs of hw/sonic_show.py; each is optional, and what was not given is listed as not
checked (never passed). Compared:

- `show interfaces status`: each planned port present, admin and oper up, at the fabric's port speed, with
  an MTU that carries the hosts' RoCE MTU;
- `ecnconfig -l`: the WRED profile the render names, ECN marking on (``ecn_all``) when the plan has ECN, its
  thresholds and drop probabilities;
- `mmuconfig -l`: the lossless buffer profile's xon / xoff / size and pool;
- `show pfc counters`: no pause frames on any priority but the lossless one (a pause on another priority
  means a host or the switch has PFC where the plan has none);
- `show queue counters`: no drops on the lossless queue of a planned port.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clusterforge.hw.sonic_show import Block, PfcCounters, PortStatus, QueueCounters, profiles
from clusterforge.switchcfg.policy import roce_qos
from clusterforge.switchcfg.ports import sonic_port, switch_ports
from clusterforge.switchcfg.readback import Readback
from clusterforge.switchcfg.sonic import LOSSLESS_PROFILE, WRED, render_sonic_qos

WRED_KEYS = tuple(
    f"{c}_{k}"
    for c in ("green", "yellow", "red")
    for k in ("min_threshold", "max_threshold", "drop_probability")
)
BUFFER_KEYS = ("xon", "xoff", "size")


def _compare_profile(
    out: Readback,
    blocks: Iterable[Block],
    table: str,
    name: str,
    want: dict[str, Any],
    keys: tuple[str, ...],
) -> dict[str, str] | None:
    """Profile `name` of the read-back `blocks` against the rendered `want` on `keys`, deviations into
    `out` under `table|name`; the read-back fields, or None when the profile is absent."""
    have = profiles(tuple(blocks))
    item = f"{table}|{name}"
    got = have.get(name)
    if got is None:
        out.add(item, "present", f"absent (profiles: {', '.join(sorted(have)) or 'none'})")
        return None
    for k in keys:
        if got.get(k) != want[k]:
            out.add(f"{item} {k}", want[k], got.get(k, "unset"))
    return got


def compare_sonic(
    plan_doc: dict[str, Any],
    switch: str,
    *,
    status: Iterable[PortStatus] | None = None,
    ecn: Iterable[Block] | None = None,
    mmu: Iterable[Block] | None = None,
    pfc: Iterable[PfcCounters] | None = None,
    queues: Iterable[QueueCounters] | None = None,
) -> Readback:
    """`switch` (a RoCE leaf/spine of the plan) read back against its rendered SONiC QoS."""
    sp = switch_ports(plan_doc, switch)
    q = roce_qos(plan_doc, sp.fabric)
    ports = [sonic_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports]
    want = render_sonic_qos(q, ports)
    out = Readback(switch)
    lossless = q.lossless_tc

    if status is None:
        out.not_checked.append("interfaces (show interfaces status)")
    else:
        seen = {s.name: s for s in status}
        for p in ports:
            s = seen.get(p)
            if s is None:
                out.add(f"{p}", "present", "absent from `show interfaces status`")
                continue
            if (s.admin, s.oper) != ("up", "up"):
                out.add(f"{p} state", "admin up, oper up", f"admin {s.admin}, oper {s.oper}")
            if s.speed_gbps != sp.port_speed_gbps:
                out.add(f"{p} speed", f"{sp.port_speed_gbps}G", f"{s.speed_gbps}G" if s.speed_gbps else "N/A")
            if s.mtu is None or s.mtu < q.mtu:
                out.add(f"{p} mtu", f"at least {q.mtu} (the hosts' RoCE MTU)", s.mtu)
        out.checked.append("interfaces")

    if ecn is None:
        out.not_checked.append("ECN/WRED (ecnconfig -l)")
    else:
        _compare_profile(out, ecn, "WRED_PROFILE", WRED, want["WRED_PROFILE"][WRED], ("ecn", *WRED_KEYS))
        out.checked.append("ECN/WRED")

    if mmu is None:
        out.not_checked.append("buffers (mmuconfig -l)")
    else:
        b = want["BUFFER_PROFILE"][LOSSLESS_PROFILE]
        got = _compare_profile(out, mmu, "BUFFER_PROFILE", LOSSLESS_PROFILE, b, BUFFER_KEYS)
        if got is not None and b["pool"] not in got.get("pool", ""):
            out.add(f"BUFFER_PROFILE|{LOSSLESS_PROFILE} pool", b["pool"], got.get("pool", "unset"))
        out.checked.append("buffers")

    if pfc is None:
        out.not_checked.append("PFC (show pfc counters)")
    else:
        mine = set(ports)
        for c in pfc:
            if c.port not in mine:
                continue
            bad = {p: n for p, n in enumerate(c.frames) if p != lossless and n}
            if bad:
                found = ", ".join(f"priority {p}: {n}" for p, n in bad.items())
                out.add(f"{c.port} PFC {c.direction}", f"pause frames on priority {lossless} only", found)
        out.checked.append("PFC")

    if queues is None:
        out.not_checked.append("lossless queue drops (show queue counters)")
    else:
        mine = set(ports)
        for qc in queues:
            if qc.port in mine and qc.unicast and qc.index == lossless and qc.drop_packets:
                out.add(f"{qc.port} {qc.queue} drops", "0 on the lossless queue", qc.drop_packets)
        out.checked.append("lossless queue drops")
    return out
