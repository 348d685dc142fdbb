"""Typed values of the fabric comparison: link ends, expected and observed links, findings, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from clusterforge.plan.site_layout import Loc


class End(NamedTuple):
    """One end of a link as the comparison keys it.

    `port` is what discovery reports for that end: InfiniBand node ends are the HCA (``mlx5_0``, from the
    node description), switch ends the IB port number as text; RoCE node ends are the netdev, switch ends
    the port name in the switch OS's naming (what LLDP carries).
    """

    device: str
    port: str


class ExpectedLink(NamedTuple):
    cable_id: str
    kind: str  # node-leaf, leaf-spine, spine-core
    fabric: str
    a: End  # the lower tier: node (node-leaf), leaf (leaf-spine), spine (spine-core)
    b: End
    a_name: str  # the port as printed on the device: netdev, switch port name
    b_name: str
    a_loc: Loc
    b_loc: Loc
    speed_gbps: int
    width: str  # "4x" on InfiniBand, "" where discovery does not report it

    def other(self, end: End) -> End:
        return self.b if end == self.a else self.a

    def describe_end(self, end: End) -> str:
        name, loc = (self.a_name, self.a_loc) if end == self.a else (self.b_name, self.b_loc)
        port = end.port if name == end.port else f"{name} ({end.port})" if name else end.port
        if end.port.isdigit():
            port = f"port {end.port}" + (f" ({name})" if name and name != end.port else "")
        return f"{loc.short} {end.device} {port}"

    def describe(self) -> str:
        return f"{self.cable_id} ({self.describe_end(self.a)} <-> {self.describe_end(self.b)})"


class ObservedLink(NamedTuple):
    a: End
    b: End
    speed_gbps: float | None  # nominal data rate (4xNDR -> 400); None when discovery does not say
    width: str  # "4x", "" when unknown
    source: str  # file the link was read from


#: what a finding says went wrong
PROBLEMS = ("swapped", "wrong_port", "wrong_device", "missing", "degraded", "extra", "unexpected_device")


@dataclass(frozen=True)
class Finding:
    problem: str  # one of PROBLEMS
    kind: str  # node-leaf, leaf-spine, spine-core; "" for extra links and devices
    cables: tuple[str, ...]  # the plan's cable IDs involved (two for a swap)
    devices: tuple[str, ...]  # devices involved, for grouping (nodes first)
    message: str
    fix: str

    def to_dict(self) -> dict[str, object]:
        return {
            "problem": self.problem,
            "kind": self.kind,
            "cables": list(self.cables),
            "devices": list(self.devices),
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class StateDeviation:
    item: str  # "Ethernet0 mtu", "qos pfc switch-priority", "opensm.conf routing_engine", ...
    expected: str
    found: str
    fix: str = ""


@dataclass
class StateCheck:
    """A switch's or a subnet manager's recorded state read back against what the plan renders for it (the
    `switch-state/` and `sm/` folders of a discovery). `source` is the folder read; empty when nothing was
    recorded for it: then it is not checked, like the links of a device the discovery lacks."""

    subject: str  # the switch's name; for an SM, its InfiniBand fabric
    kind: str  # switch | sm
    os: str = ""  # sonic, cumulus, opensm; "" when not recorded
    source: str = ""
    deviations: list[StateDeviation] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)  # items its folder did not hold

    @property
    def recorded(self) -> bool:
        return bool(self.source)

    @property
    def status(self) -> str:
        """ok, deviations, or not checked (nothing recorded)."""
        return "not checked" if not self.recorded else "deviations" if self.deviations else "ok"

    def to_dict(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "status": self.status,
            "os": self.os,
            "source": self.source,
            "deviations": [d.__dict__.copy() for d in self.deviations],
            "checked": list(self.checked),
            "not_checked": list(self.not_checked),
        }


@dataclass
class FabricReport:
    cluster: str
    plan_hash: str
    source: str  # the discovery given
    expected: int  # expected links of the compute fabrics
    checked: int  # expected links the discovery covers
    ok: int
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # could not check (no discovery for a node, ...)
    # switches' and SMs' recorded state (empty when the discovery has no switch-state/ or sm/ folder)
    switch_state: list[StateCheck] = field(default_factory=list)

    def state_deviated(self) -> list[StateCheck]:
        return [s for s in self.switch_state if s.deviations]

    def state_unchecked(self) -> list[StateCheck]:
        return [s for s in self.switch_state if not s.recorded]

    def deviated(self, allow_unchecked: bool = False) -> bool:
        unchecked = bool(self.errors) or bool(self.state_unchecked())
        return bool(self.findings) or bool(self.state_deviated()) or (unchecked and not allow_unchecked)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(PROBLEMS, 0)
        for f in self.findings:
            out[f.problem] += 1
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "cluster": self.cluster,
            "plan_hash": self.plan_hash,
            "source": self.source,
            "expected_links": self.expected,
            "checked_links": self.checked,
            "ok_links": self.ok,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "errors": list(self.errors),
            "switch_state": [s.to_dict() for s in self.switch_state],
        }
