"""Live progress of a playbook run: a per-host table for a small run on a terminal; otherwise periodic
summary lines (counts per state, slowest hosts: clusterforge.progress)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from clusterforge.errors import printable
from clusterforge.progress import NodeProgress, Summaries, aggregate
from clusterforge.run.ansible import TaskResult
from clusterforge.term import safe


def track(progress: NodeProgress, ev: dict[str, Any]) -> None:
    """Feed one ansible-runner event into `progress`: a host runs from its first task event; a failed task
    (not ignored) makes it failed, unreachable makes it error; the play's stats end it ok or changed."""
    data = ev.get("event_data", {}) or {}
    kind = ev.get("event", "")
    host = data.get("host")
    if kind == "playbook_on_stats":
        changed = data.get("changed") or {}
        for h in set(data.get("ok") or {}) | set(changed):
            if progress.state.get(h) in ("pending", "running"):
                progress.set(h, "changed" if changed.get(h) else "ok")
        return
    if not isinstance(host, str) or not kind.startswith("runner_on_"):
        return
    if kind == "runner_on_unreachable":
        progress.set(host, "error")
    elif kind == "runner_on_failed" and not data.get("ignore_errors"):
        progress.set(host, "failed")
    elif progress.state.get(host, "pending") not in ("failed", "error", "running"):
        progress.set(host, "running")


class Progress:
    """Ansible-runner events → a rich Live table (small run on a terminal) or summary lines (CI, large)."""

    def __init__(
        self, console: Console, hosts: list[str], label: str = "provision", interval: float | None = None
    ) -> None:
        self.console = console
        self.counts: dict[str, dict[str, int]] = {
            h: {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0} for h in hosts
        }
        self.nodes = NodeProgress(hosts)
        self.aggregated = aggregate(console, len(hosts))
        self.summaries = Summaries(
            console, self.nodes, "provision", self.aggregated, *([interval] if interval else [])
        )
        self.task = ""
        self.label = ""
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if not self.aggregated:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        self.summaries.__enter__()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.summaries.__exit__(et, ev, tb)
        if self._live:
            self._live.__exit__(et, ev, tb)

    def phase(self, label: str) -> None:
        self.label = label
        if not self._live:
            self.console.print(f"[bold]»[/] {safe(label)}")
        self._refresh()

    def event(self, ev: dict[str, Any]) -> None:
        data = ev.get("event_data", {}) or {}
        kind = ev.get("event", "")
        if kind == "playbook_on_task_start":
            self.task = str(data.get("task", ""))
        track(self.nodes, ev)
        host = data.get("host")
        if host in self.counts:
            res = data.get("res", {}) or {}
            key = {
                "runner_on_ok": "changed" if res.get("changed") else "ok",
                "runner_on_failed": "failed",
                "runner_on_unreachable": "unreachable",
            }.get(kind)
            if key == "failed" and data.get("ignore_errors"):
                key = "ok"
            if key:
                self.counts[host][key] += 1
        self._refresh()

    def diffs(self, tasks: list[TaskResult]) -> None:
        for t in tasks:
            if t.status == "changed":
                role = f"{t.role}: " if t.role else ""
                self.console.print(f"[yellow]~[/] {safe(f'{t.host}: {role}{t.task}')}")
                for d in t.diff:
                    before, after = d.get("before", ""), d.get("after", "")
                    hdr = d.get("before_header") or d.get("after_header") or ""
                    if before or after:
                        self.console.print(
                            f"    {printable(hdr)}\n    - {printable(str(before).strip()[:300])}"
                            f"\n    + {printable(str(after).strip()[:300])}",
                            highlight=False,
                            markup=False,
                        )

    def _table(self) -> Table:
        t = Table(title=f"{safe(self.label)} — {safe(self.task)}", expand=False)
        for col in ("host", "ok", "changed", "failed", "unreachable"):
            t.add_column(col)
        for h, c in self.counts.items():
            t.add_row(safe(h), str(c["ok"]), str(c["changed"]), str(c["failed"]), str(c["unreachable"]))
        return t

    def _refresh(self) -> None:
        if self._live:
            self._live.update(self._table())
