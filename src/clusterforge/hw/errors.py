"""The one exception every hardware-output parser raises."""

from __future__ import annotations


class ParseError(ValueError):
    """Raised when tool output is unrecognised, truncated or internally inconsistent.

    ``tool`` names the tool whose output was being parsed, ``reason`` says what was wrong or
    missing, and ``line_no`` (1-based) / ``line`` point at the offending input line when there is one.
    """

    def __init__(
        self, tool: str, reason: str, *, line_no: int | None = None, line: str | None = None
    ) -> None:
        self.tool = tool
        self.reason = reason
        self.line_no = line_no
        self.line = line
        where = ""
        if line_no is not None:
            where = f" (line {line_no}" + (f": {line!r}" if line is not None else "") + ")"
        super().__init__(f"{tool}: {reason}{where}")
