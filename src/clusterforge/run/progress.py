"""Live progress of a run: hosts × tasks, with the current task and each host's counters."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from clusterforge.errors import printable
from clusterforge.run.ansible import TaskResult
from clusterforge.term import safe


class Progress:
    """A rich Live table fed by ansible-runner events; quiet when the console is not a terminal."""

    def __init__(self, console: Console, hosts: list[str]) -> None:
        self.console = console
        self.counts: dict[str, dict[str, int]] = {
            h: {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0} for h in hosts
        }
        self.task = ""
        self.label = ""
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
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
