"""The provision run's report as a table (`clusterforge provision`, `clusterforge drift --fix`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.term import safe


def print_report(report: Any, console: Console) -> None:
    t = Table(
        "host",
        "status",
        "changed",
        "pending reboot",
        "rebooted",
        "duration s",
        "failing task / message",
        title=f"provision {safe(report.run_id)} ({'check' if report.check else 'apply'})",
    )
    for h in sorted(report.hosts.values(), key=lambda x: x.host):
        style = {"failed": "red", "unreachable": "red", "changed": "yellow"}.get(h.status, "")
        t.add_row(
            safe(h.host),
            f"[{style}]{safe(h.status)}[/]" if style else safe(h.status),
            str(h.changed),
            safe(", ".join(h.pending_reboot) or "-"),
            "yes" if h.rebooted else "-",
            f"{h.duration:.1f}",
            safe(
                f"{h.failed_task}: {h.message}"
                if h.failed_task
                else h.message
                if h.status == "skipped"
                else ""
            ),
        )
    console.print(t)
    if report.aborted:
        console.print(f"[red]aborted[/]: {safe(report.aborted)}")
    if report.tool_error:
        console.print(f"[red]the tool failed[/]: {safe(report.tool_error)}")
    elif not report.ok and report.logs:
        console.print(f"Ansible output and events: {safe(report.logs)}")
