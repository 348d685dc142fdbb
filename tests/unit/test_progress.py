"""Progress at scale (clusterforge.progress): counts per state, the slowest nodes, summary lines on a clock
the test drives; per-node display only for a small run on a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from clusterforge.certify.display import CertifyProgress
from clusterforge.progress import NodeProgress, Summaries, aggregate
from clusterforge.run.progress import Progress, track


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=terminal, width=300, color_system=None), buf


def test_aggregate_when_not_a_terminal_or_large() -> None:
    tty, _ = _console(True)
    pipe, _ = _console(False)
    assert not aggregate(tty, 32) and aggregate(tty, 33)
    assert aggregate(pipe, 1)


def test_counts_and_slowest_on_a_fake_clock() -> None:
    clock = Clock()
    p = NodeProgress([f"n{i:02d}" for i in range(6)], clock)
    p.set("n00", "running")
    clock.now += 10
    p.set("n01", "running")
    p.set("n02", "running")
    clock.now += 5
    p.set("n03", "running")
    clock.now += 1
    p.set("n02", "failed")
    p.set("n04", "error")
    assert p.counts() == {"pending": 1, "running": 3, "ok": 0, "changed": 0, "failed": 1, "error": 1}
    assert p.slowest() == [("n00", 16.0), ("n01", 6.0), ("n03", 1.0)]
    assert p.elapsed("n02") == 6.0  # stopped when it failed
    assert p.summary("certify quick") == (
        "certify quick: 6 nodes: pending 1, running 3, failed 1, error 1 (slowest: n00 16s, n01 6s, n03 1s)"
    )
    with pytest.raises(ValueError):
        p.set("n05", "weird")


def test_slowest_of_a_finished_run_are_the_longest_finished() -> None:
    clock = Clock()
    p = NodeProgress(["a", "b"], clock)
    p.set("a", "running")
    p.set("b", "running")
    clock.now += 3
    p.set("a", "ok")
    clock.now += 4
    p.set("b", "changed")
    assert p.slowest() == [("b", 7.0), ("a", 3.0)]
    p.worse("b", "ok")  # an ok after a change does not hide it
    p.worse("a", "failed")
    assert p.state == {"a": "failed", "b": "changed"}


def test_summaries_every_interval_and_at_the_end() -> None:
    clock = Clock()
    lines: list[str] = []
    p = NodeProgress(["a", "b"], clock)
    s = Summaries(lines.append, p, "drift", enabled=True, interval=30)
    p.set("a", "running")
    clock.now += 29
    assert not s.tick() and lines == []
    clock.now += 1
    assert s.tick() and lines == ["drift: 2 nodes: pending 1, running 1 (slowest: a 30s)"]
    clock.now += 10
    assert not s.tick()
    p.set("a", "ok")
    p.set("b", "ok")
    s.__exit__(None, None, None)
    assert lines[-1] == "drift: 2 nodes: pending 0, running 0, ok 2 (slowest: a 40s, b 0s)"
    quiet: list[str] = []
    q = Summaries(quiet.append, p, "x", enabled=False, interval=0)
    clock.now += 100
    assert not q.tick()
    q.__exit__(None, None, None)
    assert quiet == []


def test_ansible_events_drive_the_states() -> None:
    p = NodeProgress(["a", "b", "c", "d"])

    def ev(kind: str, host: str | None = None, **data: object) -> dict[str, object]:
        return {"event": kind, "event_data": {**({"host": host} if host else {}), **data}}

    track(p, ev("runner_on_start", "a"))
    track(p, ev("runner_on_start", "b"))
    track(p, ev("runner_on_start", "c"))
    assert p.counts()["running"] == 3
    track(p, ev("runner_on_failed", "a", ignore_errors=True))  # ignored: still running
    track(p, ev("runner_on_failed", "b"))
    track(p, ev("runner_on_unreachable", "c"))
    track(p, ev("runner_on_ok", "b"))  # a later event does not hide the failure
    assert p.state == {"a": "running", "b": "failed", "c": "error", "d": "pending"}
    track(p, ev("playbook_on_stats", ok={"a": 3, "b": 1}, changed={"a": 1}, failures={"b": 1}))
    assert p.state == {"a": "changed", "b": "failed", "c": "error", "d": "pending"}


def test_provision_progress_prints_summaries_not_a_table_in_ci() -> None:
    console, buf = _console(False)
    with Progress(console, [f"gpu-{i:03d}" for i in range(40)], label="provision") as prog:
        prog.phase("batch 1/1: site.yml")
        prog.event({"event": "runner_on_start", "event_data": {"host": "gpu-001"}})
    out = buf.getvalue()
    assert "» batch 1/1: site.yml" in out
    assert "provision: 40 nodes: pending 39, running 1 (slowest: gpu-001" in out
    assert "gpu-002" not in out  # no per-node lines


def test_small_run_on_a_terminal_has_no_summary_lines() -> None:
    console, buf = _console(True)
    with Progress(console, ["a", "b"]) as prog:
        prog.event({"event": "runner_on_start", "event_data": {"host": "a"}})
    assert "nodes:" not in buf.getvalue()


def test_certify_progress_counts_verdicts_in_ci() -> None:
    console, buf = _console(False)
    names = [f"n{i}" for i in range(4)]
    with CertifyProgress(console, names, label="certify quick") as prog:
        for n in names[:3]:
            prog(n, "connect", {})
        prog("n0", "done", {"verdict": "pass", "status": "pass"})
        prog("n1", "done", {"verdict": "fail", "status": "fail"})
        prog("n2", "done", {"verdict": "error", "status": "unreachable"})
    assert prog.nodes.counts() == {"pending": 1, "running": 0, "ok": 1, "changed": 0, "failed": 1, "error": 1}
    assert "certify quick: 4 nodes: pending 1, running 0, ok 1, failed 1, error 1" in buf.getvalue()
