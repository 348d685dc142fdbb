"""Drift items and the report that merges them per node."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class DriftItem:
    node: str
    setting: str
    expected: str
    actual: str
    source: str  # "role <role>: <task>" or "validator <check id>" or "inventory"
    severity: str = "error"  # error | warning
    fix: str = ""


@dataclass
class DriftReport:
    cluster: str
    plan_hash: str
    nodes: list[str]
    items: list[DriftItem] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the tool could not check something

    def by_node(self) -> dict[str, list[DriftItem]]:
        out: dict[str, list[DriftItem]] = {n: [] for n in self.nodes}
        for it in self.items:
            out.setdefault(it.node, []).append(it)
        return out

    def drifted(self, allow_unreachable: bool = False) -> bool:
        items = [i for i in self.items if not (allow_unreachable and i.setting == "reachability")]
        return bool(items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "plan_hash": self.plan_hash,
            "nodes": self.nodes,
            "unreachable": self.unreachable,
            "errors": self.errors,
            "items": [asdict(i) for i in self.items],
        }
