"""Exit codes and the errors that carry them, shared by every command of the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


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
        where = f"{self.file}:{self.line}" if self.line else self.file
        at = f" at `{self.path}`" if self.path else ""
        return f"{where}{at}: expected {self.expected}; found {self.found}. Fix: {self.fix}"


class InputError(ClusterforgeError):
    """Bad input: one report listing every problem found, never just the first."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, problems: list[Problem], summary: str = "invalid input") -> None:
        self.problems = list(problems)
        self.summary = summary
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.summary}: {len(self.problems)} problem(s)"]
        lines += [f"  - {p.render()}" for p in self.problems]
        return "\n".join(lines)


class NotAsDeclared(ClusterforgeError):
    """The cluster differs from its declaration (drift, failed nodes)."""

    exit_code = ExitCode.NOT_AS_DECLARED
