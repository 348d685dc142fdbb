"""The Xid policy (sourced data in ``xid_policy.yaml``) and the classification of kernel-log Xid events."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from clusterforge.hw.xid import XidEvent

CLASSES = ("fatal", "warn", "application")
_RANK = {"application": 0, "warn": 1, "fatal": 2}


@dataclass(frozen=True)
class XidRule:
    xid: int
    cls: str
    meaning: str
    sources: tuple[str, ...]
    decision: str = ""


@dataclass(frozen=True)
class Classified:
    event: XidEvent
    cls: str
    rule: XidRule | None  # None: not in the policy, `default` applied
    cause_cls: str | None = None  # class of the "caused by previous Xid N" event, when named

    @property
    def effective(self) -> str:
        """The worse of the event's class and its cause's."""
        if self.cause_cls and _RANK[self.cause_cls] > _RANK[self.cls]:
            return self.cause_cls
        return self.cls

    def describe(self) -> str:
        meaning = self.rule.meaning if self.rule else "not in the policy"
        cause = f", caused by Xid {self.event.caused_by_xid} ({self.cause_cls})" if self.cause_cls else ""
        what = "GPU lost (fallen off the bus, no Xid line: as Xid" if self.event.gpu_lost else "Xid"
        close = ")" if self.event.gpu_lost else ""
        return f"{what} {self.event.xid}{close} on {self.event.pci_bus_id} ({meaning}; {self.cls}{cause})"


@dataclass(frozen=True)
class XidPolicy:
    default: str
    rules: dict[int, XidRule]
    sources: dict[str, str]

    def classify_code(self, xid: int) -> str:
        rule = self.rules.get(xid)
        return rule.cls if rule else self.default

    def classify(self, event: XidEvent) -> Classified:
        cause = event.caused_by_xid
        return Classified(
            event,
            self.classify_code(event.xid),
            self.rules.get(event.xid),
            self.classify_code(cause) if cause is not None else None,
        )

    def of_class(self, cls: str) -> frozenset[int]:
        return frozenset(x for x, r in self.rules.items() if r.cls == cls)


def parse_policy(doc: dict[str, Any]) -> XidPolicy:
    """Validate the policy document: known classes, sources that exist, each Xid once."""
    default = doc.get("default")
    if default not in CLASSES:
        raise ValueError(f"xid policy: default must be one of {CLASSES}, got {default!r}")
    sources = {str(k): str(v) for k, v in (doc.get("sources") or {}).items()}
    rules: dict[int, XidRule] = {}
    for e in doc.get("entries") or []:
        xid, cls = int(e["xid"]), e["class"]
        if cls not in CLASSES:
            raise ValueError(f"xid policy: Xid {xid} has unknown class {cls!r}")
        if xid in rules:
            raise ValueError(f"xid policy: Xid {xid} listed twice")
        srcs = tuple(e.get("sources") or ())
        if not srcs or any(s not in sources for s in srcs):
            raise ValueError(f"xid policy: Xid {xid} must name sources from {sorted(sources)}, got {srcs}")
        rules[xid] = XidRule(xid, cls, str(e.get("meaning", "")), srcs, str(e.get("decision", "")))
    return XidPolicy(default, rules, sources)


@lru_cache(maxsize=1)
def policy() -> XidPolicy:
    text = resources.files("clusterforge.certify").joinpath("xid_policy.yaml").read_text()
    return parse_policy(yaml.safe_load(text))


def judge(events: list[XidEvent], pol: XidPolicy | None = None) -> tuple[list[Classified], list[Classified]]:
    """(fatal, other) classified events; a node passes the Xid check when ``fatal`` is empty."""
    pol = pol or policy()
    fatal: list[Classified] = []
    other: list[Classified] = []
    for ev in events:
        c = pol.classify(ev)
        (fatal if c.effective == "fatal" else other).append(c)
    return fatal, other
