"""clusterforge's passive health check, run on the node between jobs (Slurm's HealthCheckProgram, or a
systemd timer where the pool manager is not Slurm). NHC-style: fast (well under 1 s), cheap live reads and
cached results only, nothing that loads a GPU.

It is a mode of the node checker (`clusterforge.remote.checker_bundle`: the monitoring role links the health
check's path to that program), so it reads with the validators' own parts, not copies of them: the Xid
parser (`clusterforge.hw.xid`), the dcgm-exporter page parser (`clusterforge.hw.dcgm_exporter`), the check
registry (each check's action, remedies, ticket and repeat-offender rules; the Xid classes) and its window
rules (`clusterforge.checks.rules.decide`), all of the program's own version. Nothing else is loaded (no
pytest: a unit test runs it as slurmd does and looks).

Reads (config: the node's desired `monitoring.health`, JSON): the GPU count (/proc/driver/nvidia/gpus,
else the local dcgm-exporter's GPUs), Xids new since the last run (/dev/kmsg, else `dmesg`), the rails'
link state and carrier changes (sysfs), pending / failed row remaps (dcgm-exporter), the fabric manager
(systemd), and the last active run's cached result (its certificate's expiry). Each finding is an event
of a registry check; the check's action and repeat-offender rules give the action, the worst wins. An
action from `drain` up drains the node (`--pool slurm`: `scontrol update ... State=DRAIN`) with a
`clusterforge:` reason naming the check and action, unless it is already drained (by anyone: its reason
is kept). It never resumes a node. Results go to the node-exporter textfile collector.
Exit status: 0 healthy or alert only, 1 a drain action was decided, 2 the check itself could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clusterforge.checks.model import Check, rank
from clusterforge.checks.passive import NODE_CHECKS
from clusterforge.checks.registry import by_id, xid_check
from clusterforge.checks.rules import Decision, Event, decide
from clusterforge.hw import dcgm_exporter
from clusterforge.hw import xid as hw_xid
from clusterforge.hw.errors import ParseError

CONFIG = "/etc/clusterforge/healthcheck.json"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DRAINS = rank("drain")
NOT_RUN = 127  # Env.cmd: the program is missing or did not answer within its time
KEEP_S = 31 * 86400  # events older than the longest window are dropped from the state file
DMESG_TS = re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\] ")
ROW_REMAP = (
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "passive.row_remap_pending"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "passive.row_remap_failure"),
)


@dataclass
class Env:
    """What the check touches, replaceable in tests: a root for files, a command runner, an HTTP reader."""

    root: str = "/"
    now: float = field(default_factory=time.time)
    run: Callable[[list[str], float], tuple[int, str]] | None = None
    http: Callable[[str, float], str] | None = None

    def path(self, p: str) -> str:
        return os.path.join(self.root, p.lstrip("/"))

    def read(self, p: str) -> str | None:
        try:
            with open(self.path(p)) as f:
                return f.read()
        except OSError:
            return None

    def cmd(self, argv: list[str], timeout: float = 0.5) -> tuple[int, str]:
        """(exit status, stdout); NOT_RUN with the reason when the program is missing or timed out."""
        if self.run is not None:
            return self.run(argv, timeout)
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return NOT_RUN, str(exc)
        return r.returncode, r.stdout

    def get(self, url: str, timeout: float = 0.4) -> str:
        if self.http is not None:
            return self.http(url, timeout)
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return str(resp.read().decode("utf-8", "replace"))


@dataclass
class Result:
    findings: list[dict[str, Any]] = field(default_factory=list)  # events of this run
    holding: set[str] = field(default_factory=set)  # checks whose condition holds now
    errors: dict[str, str] = field(default_factory=dict)  # check -> why it could not be read

    def add(self, check: str, component: str = "", code: str = "", *, event: bool = True) -> None:
        self.holding.add(check)
        if event:
            self.findings.append({"check": check, "component": component, "code": code})


# ---- live reads -------------------------------------------------------------------------------------------


def kernel_lines(env: Env, state: dict[str, Any]) -> list[str] | None:
    """Kernel log lines new since the last run: /dev/kmsg records after the saved sequence number (each
    record's first line, header included), else `dmesg` lines after the saved timestamp; None when neither
    can be read. Either form is a kernel log `clusterforge.hw.xid.parse` reads."""
    boot = (env.read("/proc/sys/kernel/random/boot_id") or "").strip()
    if state.get("boot_id") != boot:
        state.update(boot_id=boot, kmsg_seq=-1, dmesg_ts=-1.0)
    try:
        fd = os.open(env.path("/dev/kmsg"), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        fd = -1
    if fd >= 0:
        out, last = [], int(state.get("kmsg_seq", -1))
        try:
            while True:
                try:
                    rec = os.read(fd, 8192).decode("utf-8", "replace")
                except BlockingIOError:
                    break
                except OSError:  # EPIPE: a record was overwritten before we read it; go on
                    continue
                if not rec:
                    break
                head = rec.partition(";")[0]
                seq = int(head.split(",")[1])
                if seq > last:
                    out.append(rec.split("\n", 1)[0])
                    state["kmsg_seq"] = seq
        finally:
            os.close(fd)
        return out
    rc, text = env.cmd(["dmesg"], 0.5)
    if rc != 0:
        return None
    out, last_ts, keep = [], float(state.get("dmesg_ts", -1.0)), False
    for line in text.splitlines():
        if m := DMESG_TS.match(line):
            keep = float(m.group("ts")) > last_ts
            if keep:
                state["dmesg_ts"] = float(m.group("ts"))
        elif not line[:1].isspace():
            keep = False  # not dmesg's form: left out
        if keep:  # a new record, or the indented continuation of one (a message printed over lines)
            out.append(line)
    return out


def probe(cfg: dict[str, Any], env: Env, state: dict[str, Any]) -> Result:
    res = Result()
    gpus: dict[str, dcgm_exporter.GpuFields] | None = None
    try:
        gpus = dcgm_exporter.parse(env.get(cfg["dcgm_exporter_url"]))
    except Exception as exc:  # not answering, or not its page: the remap checks cannot run (never a pass)
        for _, c in ROW_REMAP:
            res.errors[c] = f"dcgm-exporter: {exc}"
    proc = env.path("/proc/driver/nvidia/gpus")
    count = len(os.listdir(proc)) if os.path.isdir(proc) else (len(gpus) if gpus is not None else None)
    if count is None:
        res.errors["passive.gpu_lost"] = "neither /proc/driver/nvidia/gpus nor dcgm-exporter answers"
    elif count < int(cfg["gpu_count"]):
        res.add(
            "passive.gpu_lost",
            "",
            f"{count}/{cfg['gpu_count']}",
            event="passive.gpu_lost" not in state["held"],
        )
        state["held_now"].append("passive.gpu_lost")
    for gpu, fields in sorted((gpus or {}).items()):
        for fld, cid in ROW_REMAP:
            if (fields.get(fld) or 0) > 0:
                res.add(cid, f"gpu{gpu}", event=f"{cid}|gpu{gpu}" not in state["held"])
                state["held_now"].append(f"{cid}|gpu{gpu}")
    lines = kernel_lines(env, state)
    if lines is None:
        res.errors["passive.xid"] = "cannot read the kernel log (/dev/kmsg, dmesg)"
    else:
        try:
            events = hw_xid.parse("\n".join(lines))
        except ParseError as exc:
            res.errors["passive.xid"] = f"the kernel log does not parse: {exc}"
        else:
            for ev in events:
                res.add(xid_check(ev.xid).id, f"pci {ev.bus}", str(ev.xid))
    carriers = state.setdefault("carrier", {})
    for rail in cfg.get("rails", []):
        dev, comp = rail["netdev"], f"rail{rail['index']}"
        oper = env.read(f"/sys/class/net/{dev}/operstate")
        if oper is None:
            res.add("passive.rail_link_down", comp, dev, event=f"down|{comp}" not in state["held"])
            state["held_now"].append(f"down|{comp}")
            continue
        if oper.strip() not in ("up", "unknown"):
            res.add("passive.rail_link_down", comp, dev, event=f"down|{comp}" not in state["held"])
            state["held_now"].append(f"down|{comp}")
        changes = (env.read(f"/sys/class/net/{dev}/carrier_changes") or "").strip()
        if changes.isdigit():
            before = carriers.get(dev)
            carriers[dev] = int(changes)
            if before is not None and int(changes) > before:
                for _ in range((int(changes) - before + 1) // 2):  # a flap is a down and an up
                    res.add("passive.rail_link_flap", comp, dev)
    if cfg.get("fabric_manager"):
        rc, out = env.cmd(["systemctl", "is-active", "nvidia-fabricmanager.service"], 0.5)
        if rc == NOT_RUN:  # systemctl missing or not answering in time (a busy node): no verdict, no drain
            res.errors["passive.fabric_manager"] = f"systemctl is-active did not answer ({out.strip()[:80]})"
            if "passive.fabric_manager" in state["held"]:
                state["held_now"].append("passive.fabric_manager")  # unknown now: the hold stays as it was
        elif rc != 0:  # measured: inactive, failed, activating, or no such unit
            res.add("passive.fabric_manager", event="passive.fabric_manager" not in state["held"])
            state["held_now"].append("passive.fabric_manager")
    certificate(cfg, env, state, res)
    return res


def certificate(cfg: dict[str, Any], env: Env, state: dict[str, Any], res: Result) -> None:
    """The last active run's cached result (`<state_dir>/last-run.json`, written after certification)."""
    text = env.read(os.path.join(cfg["state_dir"], "last-run.json"))
    if text is None:
        res.errors["passive.certificate_expired"] = "no cached result of an active run on this node"
        return
    try:
        expires = float(json.loads(text)["expires_at_s"])
    except (ValueError, KeyError, TypeError):
        res.errors["passive.certificate_expired"] = "the cached result of the last run does not parse"
        return
    if expires <= env.now:
        res.add("passive.certificate_expired", event="cert" not in state["held"])
        state["held_now"].append("cert")
    elif expires - env.now < float(cfg.get("certificate_warn_s", 7 * 86400)):
        res.add("passive.certificate_expiring", event=False)


# ---- the run ----------------------------------------------------------------------------------------------


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def evaluate(res: Result, state: dict[str, Any], node: str, now: float) -> list[Decision]:
    """Record this run's events into the state's history; the registry's decisions on the checks that hold
    now, worst action first (between equal actions, in `NODE_CHECKS` order)."""
    events = [e for e in state.get("events", []) if now - float(e["at"]) < KEEP_S]
    events += [{**f, "at": now} for f in res.findings]
    state["events"] = events
    registry: dict[str, Check] = by_id()
    history = [
        Event(e["check"], node, _at(float(e["at"])), e.get("component", ""), e.get("code", ""))
        for e in events
    ]
    out = []
    for cid in sorted(res.holding):
        check = registry.get(cid)
        if check is None:
            continue
        d = decide(check, node, history, _at(now))
        if d is None:  # a condition that held since an event already pruned: its own action
            d = Decision(cid, node, check.action, 0, ticket=check.ticket, next_steps=check.remedies)
        out.append(d)
    order = {c: i for i, c in enumerate(NODE_CHECKS)}
    return sorted(out, key=lambda d: (-rank(d.action), order.get(d.check, len(order))))


def drain_slurm(env: Env, node: str, why: str) -> str:
    rc, out = env.cmd(["scontrol", "show", "node", "-o", node], 0.5)
    if rc != 0:
        return f"error: scontrol show node failed ({rc})"
    state = re.search(r"\bState=(\S+)", out)
    if state and "DRAIN" in state.group(1).upper():
        return "left drained (already drained; its reason kept)"
    rc, _ = env.cmd(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"], 0.5)
    return "drained" if rc == 0 else f"error: scontrol update failed ({rc})"


def metrics(node: str, res: Result, decisions: list[Decision], took: float, now: float) -> str:
    esc = node.replace("\\", "\\\\").replace('"', '\\"')
    failed = {d.check for d in decisions}
    lines = [
        "# HELP clusterforge_health_check_failed 1 when the passive check found a fault on its last run",
        "# TYPE clusterforge_health_check_failed gauge",
    ]
    ids = sorted(set(NODE_CHECKS) | set(res.errors))
    lines += [f'clusterforge_health_check_failed{{node="{esc}",check="{c}"}} {int(c in failed)}' for c in ids]
    lines += [
        "# HELP clusterforge_health_check_error 1 when the passive check could not read what it checks",
        "# TYPE clusterforge_health_check_error gauge",
    ]
    lines += [
        f'clusterforge_health_check_error{{node="{esc}",check="{c}"}} {int(c in res.errors)}' for c in ids
    ]
    worst = decisions[0].action if decisions else "ignore"
    lines += [
        "# HELP clusterforge_health_action_rank Worst action of the last run (0 ignore .. 5 service)",
        "# TYPE clusterforge_health_action_rank gauge",
        f'clusterforge_health_action_rank{{node="{esc}"}} {rank(worst)}',
        "# HELP clusterforge_health_last_run_timestamp_seconds When the health check last ran",
        "# TYPE clusterforge_health_last_run_timestamp_seconds gauge",
        f'clusterforge_health_last_run_timestamp_seconds{{node="{esc}"}} {now:.3f}',
        "# HELP clusterforge_health_run_duration_seconds How long the last health check took",
        "# TYPE clusterforge_health_run_duration_seconds gauge",
        f'clusterforge_health_run_duration_seconds{{node="{esc}"}} {took:.6f}',
    ]
    return "\n".join(lines) + "\n"


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run(cfg: dict[str, Any], env: Env, node: str, pool: str) -> tuple[int, str]:
    t0 = time.monotonic()
    state_path = env.path(os.path.join(cfg["state_dir"], "state.json"))
    try:
        with open(state_path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        state = {}
    state["held"], state["held_now"] = set(state.get("held", [])), []
    res = probe(cfg, env, state)
    decisions = evaluate(res, state, node, env.now)
    state["held"] = sorted(set(state.pop("held_now")))
    _write(state_path, json.dumps(state, sort_keys=True))
    worst = decisions[0] if decisions else None
    summary = f"{worst.action}: {worst.reason}" if worst is not None else "healthy"
    rc = 0
    if worst is not None and rank(worst.action) >= DRAINS:
        rc = 1
        summary += " -> " + (drain_slurm(env, node, worst.reason) if pool == "slurm" else "reported")
    if res.errors:
        summary += " (could not check: " + ", ".join(sorted(res.errors)) + ")"
    took = time.monotonic() - t0
    textfile = cfg.get("textfile")
    if textfile and os.path.isdir(os.path.dirname(env.path(textfile))):
        _write(env.path(textfile), metrics(node, res, decisions, took, env.now))
    return rc, f"{node}: {summary}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="clusterforge-healthcheck", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--pool", choices=("slurm", "none"), help="slurm: drain with scontrol (default: config)")
    ap.add_argument("--node", default=socket.gethostname().split(".")[0])
    ap.add_argument("--state-dir", help="keep the state elsewhere and write no metrics (a benchmark's runs)")
    args = ap.parse_args(argv)
    # slurmd starts HealthCheckProgram with a bare environment: scontrol, dmesg, systemctl by their usual dirs
    os.environ["PATH"] = ":".join(
        dict.fromkeys([*filter(None, os.environ.get("PATH", "").split(":")), *SYSTEM_PATH.split(":")])
    )
    try:
        with open(args.config) as f:
            cfg = json.load(f)
        if args.state_dir:
            cfg.update(state_dir=args.state_dir, textfile="")
        rc, line = run(cfg, Env(), args.node, args.pool or str(cfg.get("pool") or "none"))
    except (OSError, ValueError, KeyError) as exc:
        print(f"clusterforge-healthcheck: cannot run: {exc}", file=sys.stderr)
        return 2
    print(line)
    return rc


if __name__ == "__main__":
    sys.exit(main())
