"""Exit codes and the errors that carry them, shared by every command of the CLI.

Error text quotes user input (spec values, paths, tool output): `printable` makes such text safe for a
terminal, and every rendering here goes through it (the CLI adds markup escaping, `clusterforge.term`).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import IntEnum

FIELD_MAX_CHARS = 500  # a quoted value longer than this is cut in error reports
PROBLEMS_SHOWN = 100  # an error report lists this many problems, then counts the rest


def printable(text: object, limit: int | None = None) -> str:
    """`text` with every control and format character escaped (ESC -> \\x1b, CR -> \\r, newline ->
    \\n, bidi overrides -> \\u202e ...), so that printing it cannot move the cursor, recolour the terminal,
    reorder the line or start a new one; cut to `limit` characters (with a note) when given."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = f"{s[:limit]}... ({len(s) - limit} more characters)"
    if s.isprintable():  # fast path: no control, format or separator characters
        return s
    return "".join(_escape(c) for c in s)


def _escape(c: str) -> str:
    if c == " " or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"):
        return c
    if c == "\t":
        return c
    code = ord(c)
    if code < 0x100:
        return {"\n": "\\n", "\r": "\\r"}.get(c, f"\\x{code:02x}")
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class ExitCode(IntEnum):
    """Process exit codes of every `clusterforge` command (documented in the README)."""

    OK = 0
    TOOL_FAILED = 1  # a bug, an unreachable dependency, a tool that could not run
    BAD_INPUT = 2  # spec, arguments, stack config
    NOT_AS_DECLARED = 3  # drift found, nodes failed provisioning or certification


class ClusterforgeError(Exception):
    """Base class; `exit_code` says how the CLI ends when this escapes a command."""

    exit_code: ExitCode = ExitCode.TOOL_FAILED


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where, what was expected, what was found, how to fix it."""

    file: str
    path: str
    expected: str
    found: str
    fix: str
    line: int | None = None

    def render(self) -> str:
        """One line: every field is quoted text (control characters escaped, long values cut)."""
        where = printable(self.file, FIELD_MAX_CHARS) + (f":{self.line}" if self.line else "")
        at = f" at `{printable(self.path, FIELD_MAX_CHARS)}`" if self.path else ""
        exp, found, fix = (printable(s, FIELD_MAX_CHARS) for s in (self.expected, self.found, self.fix))
        return f"{where}{at}: expected {exp}; found {found}. Fix: {fix}"


class InputError(ClusterforgeError):
    """Bad input: one report listing every problem found, never just the first."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, problems: list[Problem], summary: str = "invalid input") -> None:
        self.problems = list(problems)
        self.summary = summary
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{printable(self.summary, FIELD_MAX_CHARS)}: {len(self.problems)} problem(s)"]
        lines += [f"  - {p.render()}" for p in self.problems[:PROBLEMS_SHOWN]]
        if len(self.problems) > PROBLEMS_SHOWN:
            lines.append(f"  ... and {len(self.problems) - PROBLEMS_SHOWN} more problem(s)")
        return "\n".join(lines)


class NotAsDeclared(ClusterforgeError):
    """The cluster differs from its declaration (drift, failed nodes)."""

    exit_code = ExitCode.NOT_AS_DECLARED
