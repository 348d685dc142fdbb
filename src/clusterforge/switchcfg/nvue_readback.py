"""A Cumulus Linux (NVUE) RoCE switch read back and compared with what `render_nvue` gives it.

Inputs are the parsed NVUE JSON trees of hw/nvue_show.py; each is optional, and what was not given is
listed as not checked (never passed). Compared, value for value with the rendered ``nv set`` tree:

- the applied revision's ``qos`` branch (`nv show --applied -o json`): roce enable/mode, trust, the DSCP ->
  switch-priority entries the render sets, PFC on exactly the rendered priorities (and tx/rx/cable-length),
  congestion-control (ECN) of the rendered traffic classes, egress-queue-mapping, egress-scheduler and the
  PFC watchdog; its ``interface`` branch, where given: each planned port configured, admin state up, an
  MTU that carries the hosts' RoCE MTU and the watchdog on where the render turns it on;
- the operational interface tree (`nv show interface -o json`): each planned port present, up, at the
  fabric's port speed, with an MTU that carries the hosts' RoCE MTU.

Each deviation carries the `nv set` command that puts the rendered value back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clusterforge.hw.nvue_show import NvApplied, NvLink, NvQos
from clusterforge.switchcfg.nvue import PROFILE, render_nvue_qos
from clusterforge.switchcfg.policy import roce_qos
from clusterforge.switchcfg.ports import cumulus_port, switch_ports
from clusterforge.switchcfg.readback import Readback


def _same(want: object, got: object) -> bool:
    return got is not None and str(want) == str(got)


def _show(v: object) -> str:
    return "unset" if v is None else str(v)


def _qos(out: Readback, want: dict[str, Any], got: NvQos) -> None:
    def check(item: str, w: object, g: object, cmd: str) -> None:
        if not _same(w, g):
            out.add(f"qos {item}", w, _show(g), f"nv set qos {cmd} {w}")

    r = want["roce"]
    check("roce enable", r["enable"], got.roce_enable, "roce enable")
    check("roce mode", r["mode"], got.roce_mode, "roce mode")
    m = want["mapping"][PROFILE]
    check("mapping trust", m["trust"], got.trust, f"mapping {PROFILE} trust")
    for d, e in m["dscp"].items():
        sp = e["switch-priority"]
        check(f"mapping dscp {d}", sp, got.dscp.get(int(d)), f"mapping {PROFILE} dscp {d} switch-priority")
    p = want["pfc"][PROFILE]
    planned = sorted(int(k) for k in p["switch-priority"])
    if list(got.pfc_priorities) != planned:
        found = ", ".join(map(str, got.pfc_priorities)) or "none"
        fix = "; ".join(
            [f"nv set qos pfc {PROFILE} switch-priority {k}" for k in planned if k not in got.pfc_priorities]
            + [
                f"nv unset qos pfc {PROFILE} switch-priority {k}"
                for k in got.pfc_priorities
                if k not in planned
            ]
        )
        out.add("qos pfc switch-priority", ", ".join(map(str, planned)), found, fix)
    for k, v in p.items():
        if k != "switch-priority":
            check(f"pfc {k}", v, got.pfc.get(k), f"pfc {PROFILE} {k}")
    for tc, e in want["congestion-control"][PROFILE]["traffic-class"].items():
        have = got.ecn.get(int(tc))
        fields = {
            "ecn": have and have.ecn,
            "red": have and have.red,
            "min-threshold": have and have.min_threshold,
            "max-threshold": have and have.max_threshold,
            "probability": have and have.probability,
        }
        for k, v in e.items():
            check(
                f"congestion-control tc {tc} {k}",
                v,
                fields[k],
                f"congestion-control {PROFILE} traffic-class {tc} {k}",
            )
    for sp, e in want["egress-queue-mapping"][PROFILE]["switch-priority"].items():
        tc = e["traffic-class"]
        cmd = f"egress-queue-mapping {PROFILE} switch-priority {sp} traffic-class"
        check(f"egress-queue-mapping switch-priority {sp}", tc, got.queue_map.get(int(sp)), cmd)
    for tc, e in want["egress-scheduler"][PROFILE]["traffic-class"].items():
        have_s = got.scheduler.get(int(tc), {})
        for k, v in e.items():
            check(
                f"egress-scheduler tc {tc} {k}",
                v,
                have_s.get(k),
                f"egress-scheduler {PROFILE} traffic-class {tc} {k}",
            )
    for k, v in want.get("pfc-watchdog", {}).items():
        check(f"pfc-watchdog {k}", v, got.pfc_watchdog.get(k), f"pfc-watchdog {k}")


def compare_nvue(
    plan_doc: dict[str, Any],
    switch: str,
    *,
    applied: NvApplied | None = None,
    interfaces: Iterable[NvLink] | None = None,
) -> Readback:
    """`switch` (a RoCE leaf/spine of the plan) read back against its rendered NVUE QoS."""
    sp = switch_ports(plan_doc, switch)
    q = roce_qos(plan_doc, sp.fabric)
    ports = [cumulus_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports]
    want = render_nvue_qos(q, ports)["set"]
    out = Readback(switch)
    mtu_fix = f"nv set interface {{p}} link mtu {q.mtu}  (at least the hosts' RoCE MTU)"

    if applied is None:
        out.not_checked.append("QoS (nv show --applied -o json)")
    else:
        _qos(out, want["qos"], applied.qos)
        out.checked.append("QoS")
        if applied.interfaces is None:
            out.not_checked.append("configured ports (no interface branch in the applied tree)")
        else:
            seen = {i.name: i for i in applied.interfaces}
            wd = want.get("interface", {})
            for p in ports:
                i = seen.get(p)
                if i is None:
                    out.add(
                        f"{p} (applied)",
                        "configured",
                        "absent from the applied configuration",
                        f"nv set interface {p}",
                    )
                    continue
                if i.state not in (None, "up"):
                    out.add(f"{p} link state (applied)", "up", i.state, f"nv set interface {p} link state up")
                if i.mtu is None or i.mtu < q.mtu:
                    out.add(
                        f"{p} mtu (applied)",
                        f"at least {q.mtu} (the hosts' RoCE MTU)",
                        _show(i.mtu),
                        mtu_fix.format(p=p),
                    )
                w = wd.get(p, {}).get("qos", {}).get("pfc-watchdog", {}).get("state")
                if w is not None and not _same(w, i.pfc_watchdog):
                    out.add(
                        f"{p} qos pfc-watchdog state",
                        w,
                        _show(i.pfc_watchdog),
                        f"nv set interface {p} qos pfc-watchdog state {w}",
                    )
            out.checked.append("configured ports")

    if interfaces is None:
        out.not_checked.append("ports (nv show interface -o json)")
    else:
        seen = {i.name: i for i in interfaces}
        for p in ports:
            i = seen.get(p)
            if i is None:
                out.add(p, "present", "absent from `nv show interface`")
                continue
            if i.state != "up":
                out.add(
                    f"{p} state",
                    "up",
                    _show(i.state),
                    "check the cable and `nv show interface " + p + " link`",
                )
            if i.speed_gbps != sp.port_speed_gbps:
                out.add(
                    f"{p} speed",
                    f"{sp.port_speed_gbps}G",
                    _show(i.speed),
                    f"nv set interface {p} link speed {sp.port_speed_gbps}G",
                )
            if i.mtu is None or i.mtu < q.mtu:
                out.add(
                    f"{p} mtu", f"at least {q.mtu} (the hosts' RoCE MTU)", _show(i.mtu), mtu_fix.format(p=p)
                )
        out.checked.append("ports")
    return out
