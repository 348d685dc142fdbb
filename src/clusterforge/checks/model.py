"""Types of the check registry: what a check is, what it costs, and what to do when it fails.

A check declares its severity, whether it is active (clusterforge runs something on the node) or passive
(it reads what the node or an exporter already reports), its cost class, the immediate action on failure
and the remedies to try next (NVIDIA's health-validation notation "drain: reset_gpu → service_required"
is `action="drain", remedies=("reset_gpu", "service")`), and repeat-offender rules that escalate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["critical", "major", "minor", "info"]
Mode = Literal["active", "passive"]
Cost = Literal["instant", "cheap", "moderate", "expensive"]
Source = Literal["validator", "burnin", "passive"]
Action = Literal["ignore", "alert", "drain", "reset_gpu", "reboot", "service"]
Scope = Literal["component", "node"]

SEVERITIES: tuple[Severity, ...] = ("critical", "major", "minor", "info")
MODES: tuple[Mode, ...] = ("active", "passive")
COSTS: tuple[Cost, ...] = ("instant", "cheap", "moderate", "expensive")
SOURCES: tuple[Source, ...] = ("validator", "burnin", "passive")
#: in escalating order: a later action includes taking the node out of jobs as the earlier ones do
ACTIONS: tuple[Action, ...] = ("ignore", "alert", "drain", "reset_gpu", "reboot", "service")
COST_MEANING: dict[Cost, str] = {
    "instant": "under 1 s per node (cached results, sysfs/procfs reads, an exporter's series)",
    "cheap": "seconds per node (one tool call: nvidia-smi, ibstat, a config read)",
    "moderate": "minutes per node, the node busy (DCGM diagnostics level 2, bandwidth tests)",
    "expensive": "tens of minutes or more, the node busy (burn-in iterations, DCGM level 3/4)",
}
ACTION_MEANING: dict[Action, str] = {
    "ignore": "record only",
    "alert": "record and alert; the node keeps taking jobs",
    "drain": "take the node out of the pool (a `clusterforge:` drain reason naming the check and action)",
    "reset_gpu": "drain, then reset the GPU (`nvidia-smi -r`) when it is idle",
    "reboot": "drain, then reboot the node",
    "service": "drain and open a hardware service / RMA ticket; the node stays out until repaired",
}


def rank(action: Action) -> int:
    return ACTIONS.index(action)


@dataclass(frozen=True)
class Rule:
    """Escalate to `action` when `count` events of the check fall within `window_s` seconds.

    `scope`: "component" counts per component and code (one GPU's Xid 79s, one link's flaps),
    "node" per node and code.
    """

    count: int
    window_s: float
    action: Action
    scope: Scope = "component"
    ticket: str = ""  # e.g. "cable", "hardware": what to open besides the action
    why: str = ""

    def describe(self) -> str:
        per = "on one component" if self.scope == "component" else "on one node"
        ticket = f" and open a {self.ticket} ticket" if self.ticket else ""
        return f"{self.short()} {per} -> {self.action}{ticket}"

    def short(self) -> str:
        return f"{self.count}x in {_span(self.window_s)}"


def _span(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n and seconds % n == 0:
            return f"{int(seconds // n)} {unit}"
    return f"{seconds:g} s"


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    source: Source
    severity: Severity
    mode: Mode
    cost: Cost
    action: Action
    remedies: tuple[Action, ...] = ()
    rules: tuple[Rule, ...] = ()
    tiers: tuple[str, ...] = ()
    ticket: str = ""
    fix: str = ""
    refs: tuple[str, ...] = ()
    xids: tuple[int, ...] = field(default=())

    def chain(self) -> str:
        """`drain: reset_gpu → service` (NVIDIA's notation)."""
        return self.action + (": " + " → ".join(self.remedies) if self.remedies else "")


REPROVISION_FIX = "re-provision the node (`clusterforge provision --limit NODE`), then re-certify"


def validator_check(
    cid: str,
    title: str,
    *,
    tiers: tuple[str, ...] = ("quick",),
    severity: Severity = "major",
    cost: Cost = "cheap",
    action: Action = "drain",
    remedies: tuple[Action, ...] = (),
    fix: str = REPROVISION_FIX,
    ticket: str = "",
    refs: tuple[str, ...] = (),
) -> Check:
    """A validator's registry entry: active, quick tier, major, cheap, drain unless told otherwise."""
    return Check(
        cid,
        title,
        "validator",
        severity,
        "active",
        cost,
        action,
        remedies,
        tiers=tiers,
        fix=fix,
        ticket=ticket,
        refs=refs,
    )
