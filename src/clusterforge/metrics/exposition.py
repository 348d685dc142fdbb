"""Prometheus text exposition format (version 0.0.4): metric families rendered deterministically.

Names must match `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`; label values escape
backslash, double quote and newline; HELP text escapes backslash and newline. A counter's name ends in
`_total`. Families are rendered sorted by name, samples by labels, so equal data gives equal bytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MetricType = Literal["gauge", "counter"]
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Sample:
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass
class Family:
    name: str
    type: MetricType
    help: str
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"invalid metric name {self.name!r}")
        if self.type == "counter" and not self.name.endswith("_total"):
            raise ValueError(f"counter {self.name!r} must end in _total")

    def add(self, value: float, **labels: str) -> None:
        for k in labels:
            if not _LABEL.match(k) or k.startswith("__"):
                raise ValueError(f"invalid label name {k!r} on {self.name}")
        self.samples.append(Sample(tuple(sorted((k, str(v)) for k, v in labels.items())), float(value)))


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels)
    return "{" + inner + "}" if inner else ""


def render(families: Iterable[Family]) -> str:
    """The exposition text of `families` (a family without samples still declares HELP and TYPE)."""
    out: list[str] = []
    seen: set[str] = set()
    for fam in sorted(families, key=lambda f: f.name):
        if fam.name in seen:
            raise ValueError(f"metric family {fam.name} rendered twice")
        seen.add(fam.name)
        out.append(f"# HELP {fam.name} {escape_help(fam.help)}")
        out.append(f"# TYPE {fam.name} {fam.type}")
        keys: set[tuple[tuple[str, str], ...]] = set()
        for s in sorted(fam.samples, key=lambda s: s.labels):
            if s.labels in keys:
                raise ValueError(f"{fam.name}{_labels(s.labels)} has two samples")
            keys.add(s.labels)
            out.append(f"{fam.name}{_labels(s.labels)} {format_value(s.value)}")
    return "\n".join(out) + "\n"


def only_node(families: Iterable[Family], node: str) -> list[Family]:
    """The same families with only the samples of `node` (and those without a node label)."""
    out = []
    for fam in families:
        keep = [s for s in fam.samples if dict(s.labels).get("node", node) == node]
        out.append(Family(fam.name, fam.type, fam.help, keep))
    return out


def label_dict(sample: Sample) -> Mapping[str, str]:
    return dict(sample.labels)
