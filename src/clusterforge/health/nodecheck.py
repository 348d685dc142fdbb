#!/usr/bin/python3
"""clusterforge's passive health check, run on the node between jobs (Slurm's HealthCheckProgram, or a
systemd timer where the pool manager is not Slurm). NHC-style: fast (well under 1 s), cheap live reads and
cached results only, nothing that loads a GPU.

Standard library only, one file: the role copies it to the node (nodes have python3, not clusterforge).
Its Xid line reading agrees with the validators' parser (`clusterforge.hw.xid`) and its window rules with
`clusterforge.checks.rules.decide` (tests/unit/health check both on the same inputs).

Reads (config: the node's desired `monitoring.health`, JSON): the GPU count (/proc/driver/nvidia/gpus,
else the local dcgm-exporter's GPUs), Xids new since the last run (/dev/kmsg, else `dmesg`), the rails'
link state and carrier changes (sysfs), pending / failed row remaps (dcgm-exporter), the fabric manager
(systemd), and the last active run's cached result (its certificate's expiry). Each finding is an event
of a registry check; the check's action and repeat-offender rules (config `checks`) give the action, the
worst wins. An action from `drain` up drains the node (`--pool slurm`: `scontrol update ... State=DRAIN`)
with a `clusterforge:` reason naming the check and action, unless it is already drained (by anyone: its
reason is kept). It never resumes a node. Results go to the node-exporter textfile collector.
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
from typing import Any

CONFIG = "/etc/clusterforge/healthcheck.json"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ACTIONS = ("ignore", "alert", "drain", "reset_gpu", "reboot", "service")
DRAINS = ACTIONS.index("drain")
MAX_REASON = 200
NOT_RUN = 127  # Env.cmd: the program is missing or did not answer within its time
KEEP_S = 31 * 86400  # events older than the longest window are dropped from the state file
_BUS = r"(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
XID_RE = re.compile(rf"NVRM: Xid \((?:PCI:)?{_BUS}(?:\.[0-7])?\): (?P<xid>\d+)[,\s]")
LOST_RE = re.compile(
    r"NVRM: GPU (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]: GPU has fallen off"
)
DMESG_TS = re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\] (?P<msg>.*)$")
METRIC_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


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


# ---- decisions (the semantics of clusterforge.checks.rules.decide) -------------------------------------


def _span(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n and seconds % n == 0:
            return f"{int(seconds // n)} {unit}"
    return f"{seconds:g} s"


def sanitize(reason: str) -> str:
    text = re.sub(r"[\"'`\\\x00-\x1f\x7f]", " ", reason)
    text = re.sub(r"[^\x20-\x7e]", "?", text).replace("=", ":")
    text = re.sub(r"\s+", " ", text).strip()
    if not text.startswith("clusterforge:"):
        text = f"clusterforge: {text}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3].rstrip() + "..."


def decide(
    check: str, policy: dict[str, Any], events: list[dict[str, Any]], now: float
) -> dict[str, Any] | None:
    """The action on `check` from its events (dicts: check, at, component, code) up to `now`."""
    mine = sorted((e for e in events if e["check"] == check and e["at"] <= now), key=lambda e: e["at"])
    if not mine:
        return None
    rank = ACTIONS.index
    last = mine[-1]
    best: dict[str, Any] = {
        "check": check,
        "action": policy["action"],
        "rule": None,
        "ticket": policy.get("ticket", ""),
        "next": list(policy.get("remedies", [])),
        "where": " ".join(k for k in (last.get("component", ""), last.get("code", "")) if k),
    }
    for rule in policy.get("rules", []):
        start = now - float(rule["window_s"])
        groups: dict[tuple[str, ...], int] = {}
        for e in mine:
            if e["at"] > start:
                key = (
                    (e.get("component", ""), e.get("code", ""))
                    if rule["scope"] == "component"
                    else (e.get("code", ""),)
                )
                groups[key] = groups.get(key, 0) + 1
        hit = [k for k, n in sorted(groups.items()) if n >= int(rule["count"])]
        if hit and rank(rule["action"]) > rank(best["action"]):
            best = {
                "check": check,
                "action": rule["action"],
                "rule": rule,
                "ticket": rule.get("ticket") or policy.get("ticket", ""),
                "next": [a for a in policy.get("remedies", []) if rank(a) > rank(rule["action"])],
                "where": " ".join(k for k in hit[0] if k),
            }
    return best


def reason(d: dict[str, Any]) -> str:
    what = f" {d['where']}" if d["where"] else ""
    rule = d["rule"]
    why = f" ({int(rule['count'])}x in {_span(float(rule['window_s']))})" if rule else ""
    then = f" then {'/'.join(d['next'])}" if d["next"] else ""
    ticket = f" +{d['ticket']} ticket" if d["ticket"] else ""
    return sanitize(f"clusterforge: {d['check']}{what}: {d['action']}{then}{ticket}{why}")


# ---- live reads -------------------------------------------------------------------------------------------


def kernel_lines(env: Env, state: dict[str, Any]) -> list[str] | None:
    """Kernel messages new since the last run (/dev/kmsg records after the saved sequence number, else
    `dmesg` lines after the saved timestamp); None when neither can be read."""
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
                head, _, msg = rec.partition(";")
                seq = int(head.split(",")[1])
                if seq > last:
                    out.append(msg.split("\n", 1)[0])
                    state["kmsg_seq"] = seq
        finally:
            os.close(fd)
        return out
    rc, text = env.cmd(["dmesg"], 0.5)
    if rc != 0:
        return None
    out, last_ts = [], float(state.get("dmesg_ts", -1.0))
    for line in text.splitlines():
        m = DMESG_TS.match(line)
        if m and float(m.group("ts")) > last_ts:
            out.append(m.group("msg"))
            state["dmesg_ts"] = float(m.group("ts"))
    return out


def xids(lines: list[str]) -> list[tuple[str, int]]:
    """(bus, xid) of each Xid line, and a GPU-lost line (as Xid 79) whose GPU printed no Xid 79."""
    found, lost = [], []
    for line in lines:
        if m := XID_RE.search(line):
            found.append((m.group("bus").lower(), int(m.group("xid"))))
        elif m := LOST_RE.search(line):
            lost.append((m.group("bus").lower(), 79))
    with_79 = {b for b, x in found if x == 79}
    return found + [e for e in dict.fromkeys(lost) if e[0] not in with_79]


def exporter_gpus(text: str) -> dict[str, dict[str, float]]:
    """gpu index -> {field: value} from a dcgm-exporter scrape."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if not m or not m.group("name").startswith("DCGM_FI_"):
            continue
        labels = dict(LABEL.findall(m.group("labels") or ""))
        try:
            out.setdefault(labels.get("gpu", ""), {})[m.group("name")] = float(m.group("value"))
        except ValueError:
            continue
    return out


def xid_check(cfg: dict[str, Any], xid: int) -> str:
    for cid, pol in cfg["checks"].items():
        if xid in pol.get("xids", []):
            return str(cid)
    pol = cfg.get("xid_policy") or {}
    for cls, codes in (pol.get("classes") or {}).items():
        if xid in codes:
            return f"passive.xid.{cls}"
    return f"passive.xid.{pol.get('default') or 'fatal'}"  # the class of an Xid the policy does not list


def probe(cfg: dict[str, Any], env: Env, state: dict[str, Any]) -> Result:
    res = Result()
    gpus: dict[str, dict[str, float]] | None = None
    try:
        gpus = exporter_gpus(env.get(cfg["dcgm_exporter_url"]))
    except Exception as exc:
        for c in ("passive.row_remap_pending", "passive.row_remap_failure"):
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
        for fld, cid in (("DCGM_FI_DEV_ROW_REMAP_PENDING", "passive.row_remap_pending"),
                         ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "passive.row_remap_failure")):  # fmt: skip
            if fields.get(fld, 0) > 0:
                res.add(cid, f"gpu{gpu}", event=f"{cid}|gpu{gpu}" not in state["held"])
                state["held_now"].append(f"{cid}|gpu{gpu}")
    lines = kernel_lines(env, state)
    if lines is None:
        res.errors["passive.xid"] = "cannot read the kernel log (/dev/kmsg, dmesg)"
    else:
        for bus, xid in xids(lines):
            res.add(xid_check(cfg, xid), f"pci {bus}", str(xid))
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


def evaluate(cfg: dict[str, Any], res: Result, state: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """Record this run's events into the state's history; the decisions of the checks that hold now."""
    events = [e for e in state.get("events", []) if now - float(e["at"]) < KEEP_S]
    events += [{**f, "at": now} for f in res.findings]
    state["events"] = events
    out = []
    for check in sorted(res.holding):
        pol = cfg["checks"].get(check)
        if pol is None:
            continue
        d = decide(check, pol, events, now)
        if d is None:  # a condition that held since an event already pruned: its own action
            d = {"check": check, "action": pol["action"], "rule": None, "ticket": pol.get("ticket", ""),
                 "next": list(pol.get("remedies", [])), "where": ""}  # fmt: skip
        out.append(d)
    order = {c: i for i, c in enumerate(cfg.get("order") or [])}
    return sorted(out, key=lambda d: (-ACTIONS.index(d["action"]), order.get(d["check"], len(order))))


def drain_slurm(env: Env, node: str, why: str) -> str:
    rc, out = env.cmd(["scontrol", "show", "node", "-o", node], 0.5)
    if rc != 0:
        return f"error: scontrol show node failed ({rc})"
    state = re.search(r"\bState=(\S+)", out)
    if state and "DRAIN" in state.group(1).upper():
        return "left drained (already drained; its reason kept)"
    rc, _ = env.cmd(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"], 0.5)
    return "drained" if rc == 0 else f"error: scontrol update failed ({rc})"


def metrics(
    node: str, cfg: dict[str, Any], res: Result, decisions: list[dict[str, Any]], took: float, now: float
) -> str:
    esc = node.replace("\\", "\\\\").replace('"', '\\"')
    failed = {d["check"] for d in decisions}
    lines = [
        "# HELP clusterforge_health_check_failed 1 when the passive check found a fault on its last run",
        "# TYPE clusterforge_health_check_failed gauge",
    ]
    ids = sorted(set(cfg["checks"]) | set(res.errors))
    lines += [f'clusterforge_health_check_failed{{node="{esc}",check="{c}"}} {int(c in failed)}' for c in ids]
    lines += [
        "# HELP clusterforge_health_check_error 1 when the passive check could not read what it checks",
        "# TYPE clusterforge_health_check_error gauge",
    ]
    lines += [
        f'clusterforge_health_check_error{{node="{esc}",check="{c}"}} {int(c in res.errors)}' for c in ids
    ]
    worst = decisions[0]["action"] if decisions else "ignore"
    lines += [
        "# HELP clusterforge_health_action_rank Worst action of the last run (0 ignore .. 5 service)",
        "# TYPE clusterforge_health_action_rank gauge",
        f'clusterforge_health_action_rank{{node="{esc}"}} {ACTIONS.index(worst)}',
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
    decisions = evaluate(cfg, res, state, env.now)
    state["held"] = sorted(set(state.pop("held_now")))
    _write(state_path, json.dumps(state, sort_keys=True))
    worst = decisions[0] if decisions else None
    summary = "healthy" if not decisions else f"{worst['action']}: {reason(worst)}" if worst else ""
    rc = 0
    if worst is not None and ACTIONS.index(worst["action"]) >= DRAINS:
        rc = 1
        summary += " -> " + (drain_slurm(env, node, reason(worst)) if pool == "slurm" else "reported")
    if res.errors:
        summary += " (could not check: " + ", ".join(sorted(res.errors)) + ")"
    took = time.monotonic() - t0
    textfile = cfg.get("textfile")
    if textfile and os.path.isdir(os.path.dirname(env.path(textfile))):
        _write(env.path(textfile), metrics(node, cfg, res, decisions, took, env.now))
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
        with open(cfg["policy"]) as f:
            cfg.update(json.load(f))  # the registry's checks and Xid classes
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
