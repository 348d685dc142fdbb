"""Drift items and the report that merges them per node."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from clusterforge.records.model import NodeOutcome, RunOutcome


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
    #: node -> why its drift ran the deep check (site.yml --check --diff); the others were read fast
    deep: dict[str, str] = field(default_factory=dict)
    #: what was read, as evidence (not reported): the nodes whose live state was compared with their applied
    #: state, and per node how many quick-validator results came back
    compared: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

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
            "deep": self.deep,
            "items": [asdict(i) for i in self.items],
        }

    def node_errors(self) -> dict[str, list[str]]:
        """The tool errors that name a node (`drift.run` writes them as "NODE: what could not run")."""
        out: dict[str, list[str]] = {}
        for e in self.errors:
            node, sep, _ = e.partition(": ")
            if sep and node in self.nodes:
                out.setdefault(node, []).append(e)
        return out

    def outcome(self, allow_unreachable: bool = False) -> RunOutcome:
        """The run as the records keep it, with the exit code's reading: `failed` when drifted, `error` when
        the tool could not check something and nothing drifted, else `passed`; per node `drifted` (any
        item), `unreachable`, `error` (a check could not run) or `ok`."""
        errors = self.node_errors()
        nodes = []
        for node, items in sorted(self.by_node().items()):
            settings = [i for i in items if i.setting != "reachability"]
            if settings:
                outcome = "drifted"
            elif node in self.unreachable:
                outcome = "unreachable"
            elif node in errors:
                outcome = "error"
            else:
                outcome = "ok"
            detail: dict[str, Any] = {}
            if settings:
                detail["items"] = [asdict(i) for i in settings]
            if node in errors:
                detail["errors"] = errors[node]
            nodes.append(NodeOutcome(node, outcome, len(settings), detail=detail))
        drifted = self.drifted(allow_unreachable)
        status = "failed" if drifted else "error" if self.errors else "passed"
        counts = {o: sum(1 for n in nodes if n.outcome == o) for o in ("drifted", "unreachable", "error")}
        message = f"{len(nodes)} nodes, " + ", ".join(f"{n} {o}" for o, n in counts.items())
        message += f"; {sum(n.changed for n in nodes)} settings drifted; {len(self.errors)} tool errors"
        return RunOutcome(status, message, tuple(nodes))
