"""dcgm-exporter's metrics page (``curl localhost:9400/metrics``): Prometheus text exposition with one
sample per GPU and DCGM field, labelled with the GPU's index (``gpu``), ``UUID``, ``pci_bus_id`` and
``modelName`` (plus ``Hostname``, the driver version and, on Kubernetes, the pod using the GPU).

``# HELP``/``# TYPE`` comments and samples of other families are skipped, and so are DCGM samples without
a ``gpu`` label (per-NVSwitch or per-link entities). Several samples of one field on one GPU (extra labels
such as ``err_code`` on ``DCGM_FI_DEV_XID_ERRORS``) give the largest value. Anything else that is not an
exposition line raises :class:`ParseError`, as does a page with no per-GPU DCGM sample at all (not
dcgm-exporter's answer). ``partial=True`` is for captures from a terminal or a document: an elision marker
(``[...]``), a line that is not exposition (``Handling connection for 9400`` from ``kubectl
port-forward``) and a cut last line are skipped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._common import is_elision, require_text, split_lines
from .errors import ParseError

TOOL = "dcgm-exporter"
_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?[ \t]+(?P<value>\S+)(?:[ \t]+-?\d+)?$"
)
_LABEL = re.compile(r'\s*(?P<k>[A-Za-z_][A-Za-z0-9_]*)="(?P<v>(?:[^"\\\n]|\\.)*)"\s*(?:,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class GpuFields:
    gpu: str  # the exporter's index label, "0".."7"
    uuid: str
    pci_bus_id: str  # as the exporter prints it, "00000000:00:09.0"
    model: str
    values: Mapping[str, float] = field(hash=False)  # DCGM field name -> value

    def get(self, name: str) -> float | None:
        return self.values.get(name)


def _labels(text: str, line_no: int, raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m or m.end() == pos:
            raise ParseError(TOOL, "labels do not decode", line_no=line_no, line=raw)
        out[m["k"]] = re.sub(r"\\.", lambda e: _UNESCAPE.get(e.group(0), e.group(0)), m["v"])
        pos = m.end()
    return out


def _value(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse(text: str, *, partial: bool = False) -> dict[str, GpuFields]:
    """GPU index -> its DCGM fields, in the order the GPUs first appear."""
    require_text(TOOL, text)
    lines = split_lines(text)
    last = max((i for i, ln in enumerate(lines, 1) if ln.strip()), default=0)
    meta: dict[str, tuple[str, str, str]] = {}  # gpu -> (UUID, PCI bus id, model) of its first sample
    values: dict[str, dict[str, float]] = {}
    for line_no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        value = _value(m["value"]) if m else None
        if m is None or value is None:
            if partial and (is_elision(line) or not line.startswith("DCGM_") or line_no == last):
                continue
            raise ParseError(TOOL, "not a metrics sample line", line_no=line_no, line=raw)
        if not m["name"].startswith("DCGM_"):
            continue
        labels = _labels(m["labels"] or "", line_no, raw)
        gpu = labels.get("gpu")
        if gpu is None:
            continue
        meta.setdefault(
            gpu, (labels.get("UUID", ""), labels.get("pci_bus_id", ""), labels.get("modelName", ""))
        )
        mine = values.setdefault(gpu, {})
        before = mine.get(m["name"])
        if before is None or (not math.isnan(value) and (math.isnan(before) or value > before)):
            mine[m["name"]] = value
    if not meta:
        raise ParseError(TOOL, "no per-GPU DCGM sample (not dcgm-exporter's metrics page?)")
    return {gpu: GpuFields(gpu, *meta[gpu], values[gpu]) for gpu in meta}
