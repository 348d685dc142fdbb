"""The check helper every validator uses: run a command on a node with a timeout, parse it, fail closed.

Three outcomes, never a silent pass:

- the node is as expected → the test returns (verdict ``pass``);
- the node is wrong → :class:`CheckFailed` (an ``AssertionError``; verdict ``fail``) with what was
  expected, what was found and the fix;
- the check could not run → :class:`CheckError` (verdict ``error``): the tool hung past its timeout, is
  missing, exited unexpectedly, printed output no parser recognises, or the node is unreachable.

Every remote command runs as ``timeout -k 2 N sh -c CMD`` on the node, and the local ssh client has its
own deadline (N + grace), so neither a hung tool nor a hung connection can hang the run. Results are
cached per node (errors too): a hung ``nvidia-smi`` costs one timeout, not one per GPU check.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from clusterforge.certify.batch import PREFETCH, batch_script, parse_batch, prefetches
from clusterforge.hw import ParseError
from clusterforge.remote.commands import RC_REMOTE_255, RC_SSH, read_cmd, read_many_cmd, wrap
from clusterforge.remote.tools import Tool, cannot_certify, missing, tool_of

T = TypeVar("T")
__all__ = [
    "PREFETCH",
    "Attempt",
    "CheckError",
    "CheckFailed",
    "CommandRecord",
    "Fix",
    "Probe",
    "ToolMissing",
    "Unreachable",
    "expect",
    "expect_equal",
    "expect_none_bad",
    "measure",
    "prefetches",
    "read_cmd",
    "read_many_cmd",
    "wrap",
]


#: exit codes of coreutils `timeout` and of a shell that cannot find / execute the tool
RC_TIMEOUT = (124, 137)
RC_NOT_FOUND = 127
RC_NOT_EXECUTABLE = 126
KEEP = 4000  # characters of stdout/stderr kept as evidence per command
LOCAL_GRACE_S = 10


class CheckError(Exception):
    """The check could not run: verdict ``error`` (distinct from ``fail``, never a pass)."""

    def __init__(self, message: str, *, command: str | None = None) -> None:
        self.command = command
        super().__init__(message)


class Unreachable(CheckError):
    """The node did not answer over SSH."""


class ToolMissing(CheckError):
    """A tool the check runs is not installed, or a daemon it needs is down: verdict ``error`` naming the
    tool and the role/tag that installs it (never ``fail``: nothing was measured)."""

    def __init__(self, tool: Tool, node: str, *, command: str | None = None, detail: str = "") -> None:
        self.tool = tool
        super().__init__(
            f"{cannot_certify(tool)} on {node}" + (f"; {detail}" if detail else ""), command=command
        )


@dataclass(frozen=True)
class Fix:
    """How to make a node right: a role and tag to re-apply, or a free-text action for hardware."""

    role: str | None = None
    tag: str | None = None
    action: str | None = None

    def render(self, node: str) -> str:
        parts = []
        if self.tag:
            parts.append(f"run `clusterforge provision --tags {self.tag} --limit {node}` (role {self.role})")
        if self.action:
            parts.append(self.action)
        return "; ".join(parts) or "investigate the node"


class CheckFailed(AssertionError):
    """The node is not as declared: verdict ``fail``. The message always says expected, found and fix."""

    def __init__(self, what: str, expected: Any, found: Any, fix: str) -> None:
        self.what, self.expected, self.found, self.fix = what, str(expected), str(found), fix
        super().__init__(f"{what}: expected {self.expected}; found {self.found}. Fix: {fix}")


@dataclass
class CommandRecord:
    command: str
    rc: int | None
    seconds: float
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    cached: bool = False
    batched: bool = False  # came from a prefetch batch (its time is the batch's, not this command's)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Attempt:
    """One measurement of a performance check (every attempt is recorded)."""

    n: int
    value: float | None
    unit: str
    passed: bool
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def _short(text: str) -> str:
    return text if len(text) <= KEEP else text[:KEEP] + f"\n[... {len(text) - KEEP} more characters]"


class Probe:
    """Runs commands on one node for the validators; remembers outputs, errors and evidence.

    ``host`` is a testinfra ``Host``. With the ssh backend the ssh client is started here with its own
    deadline (testinfra's own ``run`` has none); other backends go through ``host.run``. ``share=False``:
    no output is reused from an earlier check (each check runs its own commands); a hung tool is still
    not run again.
    """

    def __init__(self, host: Any, node: str, timeout: int, share: bool = True) -> None:
        self.host = host
        self.node = node
        self.timeout = int(timeout)
        self.share = share
        self._cache: dict[str, tuple[int, str, str] | CheckError] = {}
        self._unreachable: Unreachable | None = None
        self._hung: dict[str, str] = {}  # tool -> the command that hung: the tool is not run again
        self._prefetched: dict[str, tuple[int, str, str]] = {}
        self.log: list[CommandRecord] = []
        self.notes: dict[str, Any] = {}
        self.attempts: list[Attempt] = []

    # -- per-test evidence -------------------------------------------------------------------------
    def take_evidence(self) -> dict[str, Any]:
        """Evidence gathered since the last call (commands, notes, attempts); resets it."""
        ev: dict[str, Any] = {"commands": [c.as_dict() for c in self.log]}
        if self.notes:
            ev["notes"] = self.notes
        if self.attempts:
            ev["attempts"] = [asdict(a) for a in self.attempts]
        self.log, self.notes, self.attempts = [], {}, []
        return ev

    def note(self, key: str, value: Any) -> None:
        self.notes[key] = value

    # -- running -----------------------------------------------------------------------------------
    def _transport(self, remote: str, budget: float) -> tuple[int, bytes, bytes]:
        """Run a shell line on the node: (rc, stdout, stderr) as bytes, within ``budget`` seconds locally."""
        backend = self.host.backend
        from testinfra.backend.ssh import SshBackend

        if isinstance(backend, SshBackend):
            tpl, args = backend._build_ssh_command(remote)
            argv = shlex.split(backend.quote(" ".join(tpl), *args))
            try:
                p = subprocess.run(
                    argv, capture_output=True, timeout=budget, stdin=subprocess.DEVNULL, check=False
                )
            except subprocess.TimeoutExpired:
                raise CheckError(
                    f"no answer from {self.node} within {budget:.0f} s (ssh)", command=remote
                ) from None
            if p.returncode == RC_SSH:
                why = p.stderr.decode(errors="replace").strip()[-300:] or "ssh exit 255"
                raise Unreachable(f"{self.node} unreachable over SSH: {why}", command=remote)
            return p.returncode, p.stdout, p.stderr
        try:
            res = self.host.run(remote)
        except RuntimeError as exc:  # testinfra raises this for connection failures
            raise Unreachable(f"{self.node} unreachable: {exc}", command=remote) from None
        return res.rc, res.stdout_bytes, res.stderr_bytes

    def _exec(self, command: str, timeout: int) -> tuple[int, str, str]:
        """(rc, stdout, stderr) of ``command`` run on the node under ``timeout``, with a local deadline."""
        rc, out, err = self._transport(wrap(command, timeout), timeout + LOCAL_GRACE_S)
        return rc, out.decode(errors="replace"), err.decode(errors="replace")

    def prefetch(self, commands: Iterable[str]) -> int:
        """Run many cheap commands in ONE round trip (each under its own remote timeout); later
        :meth:`run` calls of the same commands use these results. Purely an optimisation: if the batch
        cannot run, every check runs its own command. Returns how many results were fetched."""
        todo = [c for c in dict.fromkeys(commands) if f"{self.timeout}\0{c}" not in self._cache]
        if not todo or self._unreachable is not None:
            return 0
        try:
            rc, out, _ = self._transport(
                batch_script(todo, self.timeout), self.timeout * len(todo) + LOCAL_GRACE_S
            )
        except Unreachable as exc:
            self._unreachable = exc
            return 0
        except CheckError:
            return 0
        results = parse_batch(out, len(todo)) if rc == 0 else {}
        for i, (rc_i, o, e) in results.items():
            self._prefetched[f"{self.timeout}\0{todo[i]}"] = (rc_i, o, e)
        return len(results)

    def run(
        self, command: str, *, timeout: int | None = None, ok: Iterable[int] = (0,), cache: bool = True
    ) -> str:
        """stdout of ``command`` on the node; :class:`CheckError` when it hangs, is missing or fails."""
        if self._unreachable is not None:
            raise Unreachable(str(self._unreachable), command=command)
        t = int(timeout or self.timeout)
        tool = tool_of(command)
        if tool in self._hung:
            self.log.append(CommandRecord(command, None, 0.0, error=f"{tool} hung earlier", cached=True))
            raise CheckError(
                f"`{tool}` hung earlier on {self.node} (`{self._hung[tool]}`): not run again", command=command
            )
        key = f"{t}\0{command}"
        if cache and key in self._prefetched:  # first use of a prefetched result: log it with its output
            rc, out, err = self._prefetched.pop(key)
            self.log.append(CommandRecord(command, rc, 0.0, _short(out), _short(err), batched=True))
            self._cache[key] = (rc, out, err)
        elif cache and self.share and key in self._cache:
            hit = self._cache[key]
            if isinstance(hit, CheckError):
                self.log.append(CommandRecord(command, None, 0.0, error=str(hit), cached=True))
                raise hit
            rc, out, err = hit
            self.log.append(CommandRecord(command, rc, 0.0, cached=True))  # output: with its first run
        else:
            start = time.monotonic()
            try:
                rc, out, err = self._exec(command, t)
            except CheckError as exc:
                self.log.append(CommandRecord(command, None, time.monotonic() - start, error=str(exc)))
                if isinstance(exc, Unreachable):
                    self._unreachable = exc
                if cache:
                    self._cache[key] = exc
                raise
            self.log.append(
                CommandRecord(command, rc, round(time.monotonic() - start, 3), _short(out), _short(err))
            )
            if cache:
                self._cache[key] = (rc, out, err)
        return self._judge(command, t, rc, out, err, tuple(ok))

    def _judge(self, command: str, t: int, rc: int, out: str, err: str, ok: tuple[int, ...]) -> str:
        tool = tool_of(command)
        absent = missing(command, rc, out, err)
        if absent is not None:
            last = (err.strip() or out.strip()).splitlines()[-1:] or [""]
            what = "not running" if absent.daemon else "not installed or not on PATH"
            raise ToolMissing(
                absent,
                self.node,
                command=command,
                detail=f"`{absent.name}` is {what}: exit {rc}: {last[0][:200]}",
            )
        if rc in ok:
            return out
        if rc in RC_TIMEOUT:
            self._hung.setdefault(tool, command)
            raise CheckError(f"`{command}` hung: no result within {t} s (killed)", command=command)
        if rc == RC_NOT_EXECUTABLE:
            raise CheckError(f"`{tool}` is not executable on {self.node} (exit 126)", command=command)
        detail = (err.strip() or out.strip())[-300:]
        shown = RC_SSH if rc == RC_REMOTE_255 else rc
        raise CheckError(f"`{command}` exited {shown}: {detail}", command=command)

    def parse(
        self,
        command: str,
        parser: Callable[[str], T],
        *,
        timeout: int | None = None,
        ok: Iterable[int] = (0,),
        cache: bool = True,
    ) -> T:
        """Run and parse; output the parser does not recognise is an error, never a default."""
        out = self.run(command, timeout=timeout, ok=ok, cache=cache)
        try:
            return parser(out)
        except (ParseError, ValueError, KeyError, IndexError) as exc:
            raise CheckError(f"output of `{command}` not recognised: {exc}", command=command) from None

    def read(self, path: str) -> str:
        """One file's content, stripped (`cat`); a missing file is an error."""
        return self.run(read_cmd(path)).strip()

    def read_many(self, base: str, pattern: str, *, cache: bool = True) -> dict[str, str]:
        """Every file the fixed glob ``pattern`` matches under the directory ``base`` → its first line, in
        one round trip (``grep -H``).

        No match is an empty dict (the caller judges the absence); a file that cannot be read is an error;
        empty files are left out. ``cache=False``: read now (neither a prefetched nor an earlier result).
        """
        try:
            out = self.run(read_many_cmd(base, pattern), cache=cache)
        except CheckError as e:
            # grep names the glob itself (unexpanded) only when nothing matched: a measured absence (no
            # cpufreq driver, no such HCA); a matching file it cannot read is named by its own path
            if f"{base.rstrip('/') or ''}/{pattern}: No such file or directory" in str(e):
                return {}
            raise
        values: dict[str, str] = {}
        for line in out.splitlines():
            path, sep, value = line.partition(":")
            if not sep:
                raise CheckError(f"unexpected line reading {base}/{pattern}: {line!r}")
            values[path] = value.strip()
        return values


# -- assertions ----------------------------------------------------------------------------------------
def expect(condition: bool, what: str, expected: Any, found: Any, fix: str) -> None:
    if not condition:
        raise CheckFailed(what, expected, found, fix)


def expect_equal(what: str, expected: Any, found: Any, fix: str) -> None:
    expect(found == expected, what, expected, found, fix)


def expect_none_bad(
    what: str, bad: dict[str, Any] | list[str], expected: str, fix: str, limit: int = 8
) -> None:
    """Fail listing the offending items (a few, then a count)."""
    if not bad:
        return
    items = [f"{k}={v}" for k, v in bad.items()] if isinstance(bad, dict) else list(bad)
    shown = ", ".join(items[:limit]) + (f" (+{len(items) - limit} more)" if len(items) > limit else "")
    raise CheckFailed(what, expected, shown, fix)


def measure(
    probe: Probe,
    what: str,
    attempts: int,
    threshold: float,
    unit: str,
    once: Callable[[], tuple[float, dict[str, Any]]],
    fix: str,
) -> float:
    """Performance with retries: N attempts, pass on the first ≥ threshold, every attempt recorded.

    Every attempt an error → :class:`CheckError`; any attempt measured (none passing) → fail.
    """
    errors: list[str] = []
    values: list[float] = []
    for n in range(1, max(1, attempts) + 1):
        try:
            value, detail = once()
        except CheckError as exc:
            probe.attempts.append(Attempt(n, None, unit, False, error=str(exc)))
            errors.append(str(exc))
            if isinstance(exc, ToolMissing) and not values:
                raise  # nothing to retry: the tool is not there
            if isinstance(exc, Unreachable):
                break
            continue
        ok = value >= threshold
        probe.attempts.append(Attempt(n, round(value, 3), unit, ok, detail=detail))
        values.append(value)
        if ok:
            return value
    if not values:
        raise CheckError(f"{what}: no attempt produced a measurement ({len(errors)} tried): {errors[-1]}")
    shown = ", ".join(f"{v:.1f}" for v in values)
    raise CheckFailed(
        what,
        f">= {threshold:g} {unit} in one of {attempts} attempts",
        f"{shown} {unit}" + (f" ({len(errors)} attempt(s) errored)" if errors else ""),
        fix,
    )
