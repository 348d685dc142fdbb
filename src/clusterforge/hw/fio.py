"""``fio --output-format=json`` (flexible I/O tester).

Layout, from fio's JSON output (tests/fixtures/real/fio-json__*): an object with ``"fio version"``,
``"global options"`` and ``"jobs"``; each job has ``jobname``, ``error`` (0 = ok), ``"job options"`` and one
object per direction (``read``, ``write``, ``trim``) with ``io_bytes``, ``bw_bytes`` (bytes/s), ``bw``
(KiB/s), ``iops`` (a float), ``runtime`` (ms) and latency maps. With ``group_reporting`` the threads of a
job are one entry. fio may print warnings (``fio: ...``) before the JSON document; those lines are skipped
and kept as ``notes``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._common import require_text
from .errors import ParseError

TOOL = "fio"


@dataclass(frozen=True)
class FioIo:
    io_bytes: int
    bw_bytes: float  # bytes per second
    iops: float
    runtime_ms: int


@dataclass(frozen=True)
class FioJob:
    name: str
    error: int
    rw: str | None  # the job's rw option when fio reports it ("read", "randread", "write", ...)
    read: FioIo
    write: FioIo


@dataclass(frozen=True)
class FioResult:
    version: str
    jobs: tuple[FioJob, ...]
    notes: tuple[str, ...]  # lines printed before the JSON document

    @property
    def errors(self) -> dict[str, int]:
        return {j.name: j.error for j in self.jobs if j.error}

    def total(self, direction: str) -> FioIo:
        """Bytes, bandwidth and IOPS summed over the jobs (separate jobs run at once); runtime the longest."""
        ios = [getattr(j, direction) for j in self.jobs]
        return FioIo(
            sum(i.io_bytes for i in ios),
            sum(i.bw_bytes for i in ios),
            sum(i.iops for i in ios),
            max((i.runtime_ms for i in ios), default=0),
        )


def _num(d: dict[str, Any], key: str, where: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ParseError(TOOL, f"{where}.{key}: expected a number, found {v!r}")
    return float(v)


def _io(job: dict[str, Any], direction: str, where: str) -> FioIo:
    d = job.get(direction)
    if not isinstance(d, dict):
        raise ParseError(TOOL, f"{where}: no '{direction}' object")
    w = f"{where}.{direction}"
    return FioIo(
        int(_num(d, "io_bytes", w)), _num(d, "bw_bytes", w), _num(d, "iops", w), int(_num(d, "runtime", w))
    )


def parse(text: str) -> FioResult:
    require_text(TOOL, text)
    start = text.find("{")
    if start < 0:
        raise ParseError(TOOL, "no JSON document (run with --output-format=json)")
    notes = tuple(ln for ln in text[:start].splitlines() if ln.strip())
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as e:
        raise ParseError(TOOL, f"not JSON (run with --output-format=json): {e.msg}") from None
    if not isinstance(doc, dict) or "jobs" not in doc:
        raise ParseError(TOOL, "expected an object with 'jobs'")
    version = doc.get("fio version")
    if not isinstance(version, str):
        raise ParseError(TOOL, "no 'fio version'")
    raw = doc["jobs"]
    if not isinstance(raw, list) or not raw:
        raise ParseError(TOOL, "'jobs' is empty: fio ran no job")
    jobs = []
    for i, job in enumerate(raw):
        if not isinstance(job, dict):
            raise ParseError(TOOL, f"jobs[{i}]: expected an object")
        where = f"jobs[{i}]"
        raw_opts = job.get("job options")
        opts: dict[str, Any] = raw_opts if isinstance(raw_opts, dict) else {}
        rw = opts.get("rw") if isinstance(opts.get("rw"), str) else None
        jobs.append(
            FioJob(
                str(job.get("jobname", "")),
                int(_num(job, "error", where)),
                rw,
                _io(job, "read", where),
                _io(job, "write", where),
            )
        )
    return FioResult(version, tuple(jobs), notes)
