"""Printing user-supplied text through rich: never read as markup, control characters escaped.

Spec values, node names, paths and tool output reach the terminal only through these helpers: `safe` for
text placed inside a markup string (`console.print(f"[bold]»[/] {safe(name)}")`) or a table cell, `literal`
for a whole message printed as-is with an optional style, `md_cell` for a value in a Markdown table row of
a report. The escaping of control characters is `clusterforge.errors.printable`.
"""

from __future__ import annotations

from rich.console import Console
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


#: the width used when output is not a terminal (CI logs, pipes): wide enough that no table cell is cut
PLAIN_WIDTH = 1000


def console(stderr: bool = False) -> Console:
    """The CLI's console: a terminal keeps its width and colours; anywhere else (CI logs, `| tee`, files) the
    output is plain and wide, so tables are never wrapped at 80 columns or cut with an ellipsis."""
    import sys

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PLAIN_WIDTH, no_color=True, highlight=False, emoji=False)


def md_cell(text: str) -> str:
    """`text` as one cell of a Markdown table row: `|` escaped, line breaks folded to spaces."""
    return text.replace("|", "\\|").replace("\n", " ")
