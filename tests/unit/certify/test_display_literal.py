"""Certification's table and failure messages print node and tool text literally: rich markup in a message
(`[/x]`, `[red]`) neither crashes the printer nor styles anything, and control characters are escaped."""

from __future__ import annotations

import io

from rich.console import Console

from clusterforge.certify.display import explain, table
from clusterforge.certify.results import CheckResult, NodeResult

HOSTILE = "found [/x] [bold red]boom[/] \x1b[31mred\x1b[0m\rover"


def test_table_and_messages_are_literal() -> None:
    r = NodeResult("n1[/y]", [CheckResult("n1[/y]", "rdma.mtu", "fail", message=HOSTILE)], complete=True)
    out = io.StringIO()
    console = Console(file=out, width=300, force_terminal=False, color_system=None)
    console.print(table("certify quick", {"n1": r}, {"n1[/y]": "drain: [/z] reason"}))
    explain(console, {"n1": r})
    text = out.getvalue()
    assert "n1[/y]" in text and "drain: [/z] reason" in text
    assert "found [/x] [bold red]boom[/]" in text  # markup shown as typed, not interpreted
    assert "\x1b" not in text and "\r" not in text  # control characters escaped
