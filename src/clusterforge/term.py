"""Printing user-supplied text through rich: never read as markup, control characters escaped.

Spec values, node names, paths and tool output reach the terminal only through these helpers: `safe` for
text placed inside a markup string (`console.print(f"[bold]»[/] {safe(name)}")`) or a table cell, `literal`
for a whole message printed as-is with an optional style. The escaping of control characters is
`clusterforge.errors.printable`.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from clusterforge.errors import printable


def safe(text: object, limit: int | None = None) -> str:
    """`text` for a rich markup string: control characters escaped, then markup (`[...]`) escaped."""
    return escape(printable(text, limit))


def terminal_text(text: object) -> str:
    """Multi-line `text` (a report) for `console.out`: control characters escaped, line breaks kept."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


def literal(text: object, style: str = "") -> Text:
    """`text` as a rich Text (never parsed as markup), control characters escaped, lines kept."""
    return Text(terminal_text(text), style=style)


def error_line(label: str, message: object, style: str = "red") -> Text:
    """`label: message` with the label styled and the message literal (the CLI's error printer)."""
    return Text.assemble((label, style), ": ", literal(message))
