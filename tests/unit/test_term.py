"""Output read by CI (not a terminal) is plain and wide: tables are not wrapped at 80 columns nor cut."""

from __future__ import annotations

import io
import sys

import pytest
from rich.table import Table

from clusterforge import term


def test_plain_wide_console_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buf)  # StringIO.isatty() is False, like a CI log or a pipe
    console = term.console()
    assert console.width == term.PLAIN_WIDTH and console.no_color
    t = Table("node", "failed / errored checks")
    cell = ", ".join(f"infiniband.port_state[rail={i}] (error)" for i in range(6))
    t.add_row("gpu-0001", term.safe(cell))  # as the product adds cells: never read as markup
    console.print(t)
    assert cell in buf.getvalue() and "…" not in buf.getvalue()
    assert "\x1b[" not in buf.getvalue()


def test_md_cell_keeps_a_value_in_its_cell() -> None:
    row = "| " + term.md_cell("a|b") + " | " + term.md_cell("two\nlines") + " |"
    assert row == "| a\\|b | two lines |"
    assert row.replace("\\|", "").count("|") == 3, "three column separators, none from the values"
