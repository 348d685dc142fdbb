"""Progress while the validators run, and the per-node verdict table afterwards."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from clusterforge.certify.results import NodeResult
from clusterforge.progress import NodeProgress, Summaries, aggregate
from clusterforge.term import safe

STYLE = {"pass": "green", "fail": "red", "error": "red", "unreachable": "red", "incomplete": "yellow"}


# a node's verdict → the progress state counted in the summary lines
_FINAL = {"pass": "ok", "fail": "failed"}


class CertifyProgress:
    """One bar per node (checks done of collected, failures so far, final verdict) for a small run on a
    terminal; otherwise summary lines every 30 s: nodes per state and the slowest (clusterforge.progress)."""

    def __init__(self, console: Console, nodes: list[str], label: str = "certify") -> None:
        self.nodes = NodeProgress(nodes)
        aggregated = aggregate(console, len(nodes))
        self.summaries = Summaries(console, self.nodes, label, aggregated)
        self.progress = Progress(
            TextColumn("{task.fields[node]:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=aggregated,
        )
        self.tasks: dict[str, TaskID] = {
            n: self.progress.add_task("", total=None, node=safe(n), status="queued") for n in nodes
        }
        self.bad: dict[str, int] = dict.fromkeys(nodes, 0)
        self._lock = threading.Lock()

    def __enter__(self) -> CertifyProgress:
        self.progress.start()
        self.summaries.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.summaries.__exit__(None, None, None)
        self.progress.stop()

    def __call__(self, node: str, event: str, data: dict[str, Any]) -> None:
        if event in ("connect", "start"):
            self.nodes.set(node, "running")
        elif event == "done":
            self.nodes.set(node, _FINAL.get(str(data.get("verdict", "")), "error"))
        with self._lock:
            task = self.tasks[node]
            if event == "connect":
                self.progress.update(task, status="connecting")
            elif event == "start":
                self.progress.update(task, total=int(data.get("collected", 0)), status="running")
            elif event == "check":
                if data.get("verdict") in ("fail", "error"):
                    self.bad[node] += 1
                status = f"[red]{self.bad[node]} not passing[/]" if self.bad[node] else "running"
                self.progress.update(task, advance=1, status=status)
            elif event == "done":
                word = str(data.get("status", ""))
                self.progress.update(task, status=f"[{STYLE.get(word, 'white')}]{word}[/]")


def table(title: str, results: dict[str, NodeResult], actions: dict[str, str]) -> Table:
    t = Table(
        "node", "verdict", "pass", "fail", "error", "seconds", "failed / errored checks", "pool", title=title
    )
    for r in results.values():
        word = r.status_word
        bad = [f"{c.check_id}" for c in r.failed] + [f"{c.check_id} (error)" for c in r.errored]
        detail = ", ".join(bad[:6]) + (f" +{len(bad) - 6}" if len(bad) > 6 else "") or r.note
        counts = {v: sum(1 for c in r.checks if c.status == v) for v in ("pass", "fail", "error")}
        t.add_row(  # cells are rich markup: every value from a node, a plan or a tool goes through safe()
            safe(r.node),
            f"[{STYLE.get(word, 'white')}]{safe(word)}[/]",
            str(counts["pass"]),
            str(counts["fail"]),
            str(counts["error"]),
            f"{r.seconds:.1f}",
            safe(detail),
            safe(actions.get(r.node, "-")),
        )
    return t


def explain(console: Console, results: dict[str, NodeResult], limit: int = 20) -> None:
    """The failure messages (expected, found, fix) of every node that did not pass."""
    shown = 0
    for r in results.values():
        for c in r.failed + r.errored:
            if shown >= limit:
                total = sum(len(x.failed + x.errored) for x in results.values())
                console.print(f"... more in the JSON/JUnit report ({total} in all)")
                return
            console.print(
                f"[bold]{safe(r.node)}[/] {safe(c.check_id)} "
                f"[{STYLE[c.status]}]{c.status}[/]: {safe(c.message)}",
                highlight=False,
                soft_wrap=True,
            )
            shown += 1
