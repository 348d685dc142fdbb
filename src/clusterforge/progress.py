"""Progress of a run over many nodes that stays readable at any scale (provision, certify, drift, burn-in).

`NodeProgress` holds each node's state (pending, running, ok, changed, failed, error) and when it started.
`aggregate(console, nodes)` says how to show it: per-node lines only for a small run (≤ 32 nodes) on a
terminal; otherwise one summary line every `interval` seconds (and at each phase and at the end): the count
per state and the slowest running nodes, e.g.

    certify quick: 512 nodes: pending 0, running 24, ok 470, failed 12, error 6 (slowest: gpu-0117 95s,
    gpu-0042 91s, gpu-0300 88s)

The clock is injectable so tests drive it by hand; a background thread calls `Summaries.tick` in real runs.
Thread-safe: the stages update it from worker threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType

from rich.console import Console

from clusterforge.term import literal

STATES = ("pending", "running", "ok", "changed", "failed", "error")
FINAL = ("ok", "changed", "failed", "error")
PER_NODE_MAX = 32  # more nodes than this: summaries, even on a terminal
INTERVAL_S = 30.0
SLOWEST = 3

Clock = Callable[[], float]


def aggregate(console: Console, nodes: int) -> bool:
    """Summaries instead of per-node lines: stdout is not a terminal, or the run is large."""
    return not console.is_terminal or nodes > PER_NODE_MAX


class NodeProgress:
    """Each node's state and start time."""

    def __init__(self, nodes: Iterable[str], clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.state: dict[str, str] = dict.fromkeys(nodes, "pending")
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self._lock = threading.Lock()

    def set(self, node: str, state: str) -> None:
        """Move `node` to `state`; running starts its clock, a final state stops it. Unknown nodes are added
        (a host the inventory named that the caller did not list)."""
        if state not in STATES:
            raise ValueError(f"unknown progress state {state!r}")
        with self._lock:
            now = self.clock()
            if state == "running":
                self.started.setdefault(node, now)
                self.ended.pop(node, None)
            elif state in FINAL:
                self.started.setdefault(node, now)
                self.ended[node] = now
            self.state[node] = state

    def worse(self, node: str, state: str) -> None:
        """Record an outcome without hiding a worse one: ok < changed < failed < error."""
        rank = {"ok": 0, "changed": 1, "failed": 2, "error": 3}
        current = self.state.get(node, "pending")
        if current in rank and rank[current] >= rank[state]:
            return
        self.set(node, state)

    def counts(self) -> dict[str, int]:
        with self._lock:
            out = dict.fromkeys(STATES, 0)
            for s in self.state.values():
                out[s] += 1
            return out

    def elapsed(self, node: str) -> float:
        with self._lock:
            start = self.started.get(node)
            if start is None:
                return 0.0
            return self.ended.get(node, self.clock()) - start

    def slowest(self, n: int = SLOWEST) -> list[tuple[str, float]]:
        """The `n` running nodes that have run longest; when none runs, the longest finished ones."""
        with self._lock:
            now = self.clock()
            running = [(k, now - self.started[k]) for k, s in self.state.items() if s == "running"]
            pool = running or [(k, self.ended[k] - self.started[k]) for k in self.ended if k in self.started]
        return sorted(pool, key=lambda kv: (-kv[1], kv[0]))[:n]

    def summary(self, label: str) -> str:
        counts = self.counts()
        parts = ", ".join(f"{s} {counts[s]}" for s in STATES if counts[s] or s in ("pending", "running"))
        slow = ", ".join(f"{n} {t:.0f}s" for n, t in self.slowest())
        return f"{label}: {len(self.state)} nodes: {parts}" + (f" (slowest: {slow})" if slow else "")


def _printer(console: Console) -> Callable[[str], None]:
    return lambda text: console.print(literal(text), highlight=False, soft_wrap=True)


class Summaries:
    """Prints `progress.summary(label)` every `interval` seconds while running (a daemon thread calls
    `tick`), and once more at the end. Does nothing unless `enabled`."""

    def __init__(
        self,
        out: Console | Callable[[str], None],
        progress: NodeProgress,
        label: str,
        enabled: bool,
        interval: float = INTERVAL_S,
    ) -> None:
        self.say = _printer(out) if isinstance(out, Console) else out
        self.progress, self.label = progress, label
        self.enabled, self.interval = enabled, interval
        self.last = progress.clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> None:
        if self.enabled:
            self.say(self.progress.summary(self.label))
            self.last = self.progress.clock()

    def tick(self) -> bool:
        """Print a summary when `interval` has passed since the last one; True when it printed."""
        if self.enabled and self.progress.clock() - self.last >= self.interval:
            self.line()
            return True
        return False

    def _loop(self) -> None:
        while not self._stop.wait(min(self.interval, 1.0)):
            self.tick()

    def __enter__(self) -> Summaries:
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, name="progress-summaries", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.line()
