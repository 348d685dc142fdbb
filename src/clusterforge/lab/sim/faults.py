"""Fault injection: node-side ``clusterforge-sim fault set|clear|list`` and the host-side :func:`apply`.

Faults live in state.json (``faults: {kind: params}``) and persist until cleared, across reboots; the boot
unit and the sim daemon re-assert their side effects (kernel log lines, a rail's MTU or link state, a
stopped service). Host side: ``apply(lab, node, kind, clear=False, **params)`` runs the node-side command
through ``lab.exec`` (nsenter), which works with sshd stopped.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Protocol

from . import klog, linkerr, paths, pausestorm
from . import state as S

# kind -> (what it does, target parameter, default parameters)
KINDS: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    "gpu-missing": ("a GPU is not enumerated (nvidia-smi, topo, DCGM, CUDA tools see one fewer)", "gpu", {}),
    "row-remap-pending": (
        "remapped rows pending (Xid 63); cleared by a GPU reset (nvidia-smi -r)",
        "gpu",
        {},
    ),
    "ecc-uncorrectable": (
        "volatile+aggregate DRAM uncorrectable ECC errors (Xid 48/94)",
        "gpu",
        {"count": 2},
    ),
    "xid-79": ("NVRM Xid 79 'GPU has fallen off the bus' in the kernel log; the GPU is gone", "gpu", {}),
    "rail-down": ("a rail's port is Down/Polling and its netdev down", "rail", {}),
    "rail-half-rate": ("a rail's port trained at half rate (e.g. 200 instead of 400)", "rail", {}),
    "pfc-off": ("PFC stays off on a rail whatever mlnx_qos or dcb sets (peer/firmware override)", "rail", {}),
    "mtu-reverted": (
        "a rail's netdev MTU is forced back to 1500 (RoCE active_mtu 1024)",
        "rail",
        {"mtu": 1500},
    ),
    "cable-swap": (
        "two rails' cables are crossed at the leaves (rail=I,J): each port reaches the other's planned "
        "leaf port (smpquery -D 0,1)",
        "rail",
        {},
    ),
    "link-errors": (
        "a rail's link error counter rises while the fault is active (InfiniBand symbol_error, RoCE "
        "out_of_sequence; rate=N per second); clearing it is the repair: the counter back to its value",
        "rail",
        {"rate": 5},
    ),
    "pause-storm": (
        "a RoCE rail receives PFC pause frames on its lossless priority (ethtool -S rx_prio<P>_pause rises; "
        "rate=N per second, prio=P overrides the plan's); clearing it stops the growth",
        "rail",
        {"rate": int(pausestorm.DEFAULT_RATE)},
    ),
    "slow-gpu": ("lower copy/bus bandwidth of a GPU (PCIe downtrained, HW slowdown)", "gpu", {"factor": 0.6}),
    "slow-nic": ("lower RDMA bandwidth on a rail", "rail", {"factor": 0.7}),
    "noisy": ("larger run-to-run variance, still within thresholds", None, {"scale": 3.75}),
    "sshd-stopped": ("sshd stopped and kept from starting (node unreachable over SSH)", None, {}),
    "service-stopped": (
        "a simulated NVIDIA service is stopped and fails to start",
        None,
        {"service": "persistenced"},
    ),
    "hung-tool": ("a tool never returns (default nvidia-smi)", None, {"tool": "nvidia-smi"}),
}
SERVICES = {
    "persistenced": "nvidia-persistenced.service",
    "fabricmanager": "nvidia-fabricmanager.service",
    "dcgm": "nvidia-dcgm.service",
}


class FaultError(ValueError):
    pass


class LabLike(Protocol):
    def exec(
        self,
        name: str,
        argv: list[str],
        input: str | None = None,
        timeout: float = 60.0,
        check: bool = False,
        text: bool = True,
    ) -> subprocess.CompletedProcess[Any]: ...


# ---- host side ------------------------------------------------------------------------------------------


def apply(lab: LabLike, node: str, kind: str, clear: bool = False, **params: Any) -> dict[str, Any]:
    """Set (or clear) a fault in a running lab node; returns the node's active faults afterwards."""
    if kind not in KINDS:
        raise FaultError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
    carrier = kind == "rail-down" and hasattr(lab, "set_rail_carrier")
    if carrier and not clear:
        params.setdefault("link", "carrier")  # pull the cable on the host side, no node-side link down
    argv = [paths.ENTRY, "fault", "clear" if clear else "set", kind]
    argv += [f"{k}={v}" for k, v in params.items()]
    rails: list[int] = []
    if carrier:
        r = lab.exec(node, [paths.ENTRY, "fault", "list"], timeout=60.0)
        active = json.loads(r.stdout or "{}").get("rail-down", {}) if clear else params
        spec = str(active.get("rail", 0))
        plan: Any = getattr(lab, "plan", None)
        count = len(plan.node(node).rails) if plan is not None else 8
        rails = list(range(count)) if spec == "all" else [int(x) for x in spec.split(",") if x.strip()]
    r = lab.exec(node, argv, timeout=60.0)
    if r.returncode != 0:
        raise FaultError(f"{node}: {' '.join(argv[1:])} failed ({r.returncode}): {r.stderr or r.stdout}")
    for rail in rails:
        lab.set_rail_carrier(node, rail, clear)  # type: ignore[attr-defined]
    try:
        data: dict[str, Any] = json.loads(r.stdout)
    except ValueError:
        return {}
    return data


# ---- node side ------------------------------------------------------------------------------------------


_DEFERRED: list[list[str]] | None = None


def _sh(argv: list[str]) -> None:
    """Run a side-effect command in the node (deferred until the state lock is released, see _unlocked)."""
    if not paths.in_node():
        return
    if _DEFERRED is not None:
        _DEFERRED.append(argv)
        return
    subprocess.run(argv, check=False, capture_output=True, timeout=60)


@contextlib.contextmanager
def _after_unlock() -> Iterator[None]:
    """Collect side effects and run them once the state lock is free (a stopping daemon takes the lock)."""
    global _DEFERRED
    _DEFERRED = []
    try:
        yield
        todo = _DEFERRED
    finally:
        _DEFERRED = None
    for argv in todo:
        _sh(argv)


def sync_flags(st: dict[str, Any]) -> None:
    """One empty file per active fault under /var/lib/clusterforge-sim/faults (used by unit conditions)."""
    d = paths.p(paths.FAULT_FLAGS)
    d.mkdir(parents=True, exist_ok=True)
    want = set(st.get("faults", {}))
    if "service-stopped" in want:
        for svc in str(st["faults"]["service-stopped"].get("service", "")).split(","):
            want.add(f"service-stopped-{svc}")
    for f in d.iterdir():
        if f.name not in want:
            f.unlink()
    for name in want:
        (d / name).touch()


def _parse_params(kind: str, items: list[str]) -> dict[str, Any]:
    target, defaults = KINDS[kind][1], KINDS[kind][2]
    params: dict[str, Any] = dict(defaults)
    if target:
        params[target] = 0
    for item in items:
        if "=" not in item:
            raise FaultError(f"parameter {item!r} is not KEY=VALUE")
        k, v = item.split("=", 1)
        params[k.replace("-", "_")] = v
    return params


def emit_kernel_lines(st: dict[str, Any], kind: str) -> None:
    """Kernel log lines of a GPU fault (also re-emitted at each boot while the fault is active)."""
    drv = S.driver() or {"version": "unknown"}
    xid = {"xid-79": 79, "ecc-uncorrectable": 48, "row-remap-pending": 63}.get(kind)
    if xid is None:
        return
    for i in sorted(S.targets(st, kind, "gpu", len(st["gpus"]))):
        g = st["gpus"][i]
        for msg, level in klog.xid_lines(g["bus_id"][4:-2].lower(), g["uuid"], xid, drv["version"]):
            klog.log(msg, level)


def enforce(st: dict[str, Any]) -> None:
    """Re-assert link-level side effects (called at set, at boot and periodically by the sim daemon)."""
    for n in st["nics"]:
        if n["rail"] in S.targets(st, "mtu-reverted", "rail", len(st["nics"])):
            _sh(
                [
                    "ip",
                    "link",
                    "set",
                    "dev",
                    n["netdev"],
                    "mtu",
                    str((S.fault(st, "mtu-reverted") or {}).get("mtu", 1500)),
                ]
            )
        down = S.fault(st, "rail-down") or {}
        if n["rail"] in S.targets(st, "rail-down", "rail", len(st["nics"])) and down.get("link") != "carrier":
            _sh(["ip", "link", "set", "dev", n["netdev"], "down"])


def _netdev_mtu(netdev: str) -> int | None:
    try:
        return int(paths.read(f"/sys/class/net/{netdev}/mtu").strip())
    except ValueError:
        return None


def set_fault(kind: str, items: list[str]) -> dict[str, Any]:
    if kind not in KINDS:
        raise FaultError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
    params = _parse_params(kind, items)
    with _after_unlock(), S.locked() as st:
        if kind == "mtu-reverted":
            params["saved"] = {n["netdev"]: _netdev_mtu(n["netdev"]) or n.get("mtu") for n in st["nics"]}
        previous = st["faults"].get(kind)
        st["faults"][kind] = params
        count = len(st["gpus"] if KINDS[kind][1] == "gpu" else st["nics"])
        tkey = KINDS[kind][1]
        if tkey and not S.targets(st, kind, tkey, count) <= set(range(count)):
            raise FaultError(f"{kind}: {tkey} {params[tkey]} does not exist on this node")
        for hook in (linkerr, pausestorm):
            if kind == hook.KIND:
                try:
                    hook.on_set(st, params, previous)
                except ValueError as e:
                    raise FaultError(str(e)) from None
        if kind == "cable-swap" and len(S.targets(st, kind, "rail", count)) != 2:
            raise FaultError(
                f"cable-swap: rail must name two different rails (rail=I,J), not {params['rail']}"
            )
        sync_flags(st)
        emit_kernel_lines(st, kind)
        enforce(st)
        if kind == "sshd-stopped":
            _sh(["systemctl", "stop", "ssh.service", "ssh.socket"])
        if kind == "service-stopped":
            for svc in str(params["service"]).split(","):
                if svc not in SERVICES:
                    raise FaultError(f"service-stopped: service must be one of {', '.join(SERVICES)}")
                _sh(["systemctl", "stop", SERVICES[svc]])
        if KINDS[kind][1] == "rail":
            from . import sysfs  # port state/rate files follow at once (the sim daemon also refreshes them)

            sysfs.refresh_ports(st)
        return dict(st["faults"])


def clear_fault(kind: str) -> dict[str, Any]:
    if kind not in KINDS and kind != "all":
        raise FaultError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
    with _after_unlock(), S.locked() as st:
        kinds = list(st["faults"]) if kind == "all" else [kind]
        for k in kinds:
            rails = (
                S.targets(st, k, "rail", len(st["nics"]))
                if KINDS.get(k, ("", None, {}))[1] == "rail"
                else set()
            )
            params = st["faults"].pop(k, None)
            if params is None:
                continue
            if k == "mtu-reverted":
                for netdev, mtu in (params.get("saved") or {}).items():
                    if mtu:
                        _sh(["ip", "link", "set", "dev", netdev, "mtu", str(mtu)])
            if k == linkerr.KIND:
                linkerr.on_clear(st, params)
            if k == pausestorm.KIND:
                pausestorm.on_clear(st, params)
            if k == "rail-down":
                for n in st["nics"]:
                    if n["rail"] in rails:
                        _sh(["ip", "link", "set", "dev", n["netdev"], "up"])
            if k == "sshd-stopped":
                sync_flags(st)
                _sh(["systemctl", "start", "ssh.service"])
            if k == "service-stopped":
                sync_flags(st)
                for svc in str(params.get("service", "")).split(","):
                    if svc in SERVICES:
                        _sh(["systemctl", "reset-failed", SERVICES[svc]])
                        _sh(["systemctl", "start", SERVICES[svc]])
        sync_flags(st)
        from . import sysfs

        sysfs.refresh_ports(st)
        return dict(st["faults"])


def main(argv: list[str]) -> int:
    """``clusterforge-sim fault set KIND [K=V ...] | clear KIND|all | list | check KIND | kinds``."""
    if not argv or argv[0] not in ("set", "clear", "list", "check", "kinds"):
        sys.stderr.write("usage: clusterforge-sim fault set KIND [K=V ...] | clear KIND|all | list | kinds\n")
        return 2
    try:
        if argv[0] == "kinds":
            for k, (desc, target, _) in KINDS.items():
                print(f"{k:20} {('[' + target + '=N|all] ') if target else ''}{desc}")
            return 0
        if argv[0] == "list":
            print(json.dumps(S.load().get("faults", {}), indent=1, sort_keys=True))
            return 0
        if argv[0] == "check":  # exit 1 when the fault is active (ExecStartPre of guarded units)
            try:
                active = S.load().get("faults", {})
            except (OSError, ValueError):
                return 0  # no simulated hardware on this node: nothing is faulted
            return 1 if len(argv) > 1 and argv[1] in active else 0
        if len(argv) < 2:
            raise FaultError("missing fault KIND")
        active = set_fault(argv[1], argv[2:]) if argv[0] == "set" else clear_fault(argv[1])
    except FaultError as e:
        sys.stderr.write(f"clusterforge-sim fault: {e}\n")
        return 2
    print(json.dumps(active, indent=1, sort_keys=True))
    return 0
