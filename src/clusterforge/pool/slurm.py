"""`slurm` pool manager: drain and resume through `scontrol`, node states parsed from `scontrol show node`.

Every command runs with a timeout (a wedged slurmctld must not hang a certify run, mej/nhc #159), never
through a shell, and with `SLURM_CONF` from the caller's environment (the lab sets its own). Drain
reasons are sanitised (one line, no quotes, at most 200 characters) and always start `clusterforge:`;
resume only touches drains clusterforge owns, so an admin's drain is never undone (mej/nhc #95, flapping).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterforge.pool.base import (
    NodeState,
    PoolError,
    PoolManager,
    check_certificate_node,
    check_resume_allowed,
    sanitize_reason,
)

DEFAULT_TIMEOUT_S = 30.0
Runner = Callable[[Sequence[str], float, Mapping[str, str] | None], "CommandResult"]


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


def run_command(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None) -> CommandResult:
    try:
        p = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise PoolError(
            f"`{' '.join(argv)}` timed out after {timeout_s:.0f} s (is slurmctld answering?)"
        ) from exc
    except OSError as exc:
        raise PoolError(f"cannot run `{argv[0]}`: {exc}") from exc
    return CommandResult(p.returncode, p.stdout, p.stderr)


# --- parsing `scontrol show node` ------------------------------------------------------------------

# A field starts at `Key=` where Key is a CamelCase word at the start or after whitespace. Values may hold
# spaces (OS=Linux 5.15 #1 SMP ..., Reason=...), so a value runs up to the next such key.
_KEY = re.compile(r"(?:^|\s)([A-Z][A-Za-z0-9_]*)=")
# Reason is free text and may itself contain `Key=`: Slurm ends it with ` [user@time]`, so take it
# whole up to that stamp before splitting the rest.
_REASON = re.compile(r"(?:^|\s)Reason=(?P<text>.*?)(?: \[(?P<who>[^\]@\s]*)@(?P<when>[^\]\s]*)\])")


def split_records(text: str) -> list[str]:
    """One string per node, from the one-line (`-o`) or the multi-line form."""
    records: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("NodeName="):
            records.append(stripped)
        elif records:
            records[-1] += " " + stripped
    return records


def parse_record(record: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    m = _REASON.search(record)
    if m:
        fields["Reason"] = m.group("text").strip()
        fields["ReasonUser"], fields["ReasonTime"] = m.group("who"), m.group("when")
        record = record[: m.start()] + " " + record[m.end() :]
    keys = list(_KEY.finditer(record))
    for i, k in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(record)
        name = k.group(1)
        if name == "Reason" and "Reason" in fields:
            continue
        fields[name] = record[k.end() : end].strip()
    return fields


def parse_nodes(text: str) -> dict[str, dict[str, str]]:
    """`scontrol show node [-o]` output → {node: {field: value}} (unknown fields are kept)."""
    out: dict[str, dict[str, str]] = {}
    for rec in split_records(text):
        fields = parse_record(rec)
        out[fields["NodeName"]] = fields
    return out


_BASE = {
    "IDLE": "idle",
    "ALLOCATED": "busy",
    "ALLOC": "busy",
    "MIXED": "busy",
    "MIX": "busy",
    "COMPLETING": "busy",
    "DOWN": "down",
    "ERROR": "down",
    "FAIL": "down",
    "FUTURE": "down",
    "UNKNOWN": "unknown",
}
_SUFFIXES = "*~#!%$@^-"


def state_of(raw: str) -> tuple[str, frozenset[str]]:
    """Slurm state word → (state, flags).

    `IDLE+DRAIN` → ("drained", {"DRAIN"}); `MIXED+DRAIN` → ("draining", ...); `DOWN*+DRAIN` → ("down", ...).

    Suffixes: `*` not responding, `~` powered off, `#` powering up, `!` pending power down, `%` powering
    down, `$` maintenance reservation, `@` reboot pending, `^` reboot issued, `-` planned. A base state
    Slurm adds later (RESV, PLANNED, ...) reads as `unknown`, never as an error (mej/nhc #82).
    """
    flags: set[str] = set()
    words: list[str] = []
    for part in (p for p in raw.upper().split("+") if p):
        core = part.rstrip(_SUFFIXES)
        suffix = part[len(core) :]
        if "*" in suffix:
            flags.add("NOT_RESPONDING")
        if "~" in suffix:
            flags.add("POWERED_DOWN")
        words.append(core)
    if not words:
        return "unknown", frozenset(flags)
    base = words[0]
    flags |= set(words[1:])
    drain = "DRAIN" in flags or base in ("DRAIN", "DRAINED", "DRAINING")
    state = _BASE.get(base)
    if state == "down" or "NOT_RESPONDING" in flags or flags & {"INVALID_REG", "INVAL", "FAIL"}:
        return "down", frozenset(flags)
    if drain:
        busy = state == "busy" or base == "DRAINING" or "COMPLETING" in flags
        return ("draining" if busy else "drained"), frozenset(flags)
    if state is None:
        return "unknown", frozenset(flags)
    return ("busy" if "COMPLETING" in flags else state), frozenset(flags)


def node_state(name: str, fields: Mapping[str, str]) -> NodeState:
    raw = fields.get("State", "")
    state, _flags = state_of(raw)
    reason = fields.get("Reason", "")
    if reason in ("(null)", "none", "None"):
        reason = ""
    labels = {
        k: v
        for k, v in (
            ("partitions", fields.get("Partitions", "")),
            ("features", fields.get("ActiveFeatures", fields.get("AvailableFeatures", ""))),
            ("gres", fields.get("Gres", "")),
        )
        if v and v != "(null)"
    }
    return NodeState(name, state, reason, labels, raw=raw)


class SlurmPool(PoolManager):
    name = "slurm"

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        scontrol: str = "scontrol",
        runner: Runner | None = None,
    ) -> None:
        self.env = env
        self.timeout_s = timeout_s
        self.scontrol = scontrol
        self.runner: Runner = runner or run_command
        self.commands: list[list[str]] = []  # every command issued, for audit and tests

    def _run(self, *args: str) -> str:
        argv = [self.scontrol, *args]
        self.commands.append(argv)
        res = self.runner(argv, self.timeout_s, self.env)
        if res.returncode != 0:
            msg = (res.stderr or res.stdout).strip().splitlines()
            raise PoolError(
                f"`{' '.join(argv)}` failed ({res.returncode}): {msg[-1] if msg else 'no output'}"
            )
        return res.stdout

    def status(self, nodes: Iterable[str] | None = None) -> dict[str, NodeState]:
        parsed = parse_nodes(self._run("show", "node", "-o"))
        names = list(nodes) if nodes is not None else sorted(parsed)
        out = {}
        for n in names:
            out[n] = node_state(n, parsed[n]) if n in parsed else NodeState(n, "unknown", "not in slurm.conf")
        return out

    def _one(self, node: str) -> NodeState:
        return self.status([node])[node]

    def drain_argv(self, node: str, reason: str) -> list[str]:
        return [
            self.scontrol,
            "update",
            f"nodename={node}",
            "state=DRAIN",
            f"reason={sanitize_reason(reason)}",
        ]

    def drain(self, node: str, reason: str, *, force: bool = False) -> bool:
        current = self._one(node)
        if current.state == "unknown" and current.reason == "not in slurm.conf":
            raise PoolError(f"{node}: Slurm does not know this node")
        if current.state in ("drained", "draining") and not current.ours and not force:
            return False
        self._run(*self.drain_argv(node, reason)[1:])
        return True

    def resume(self, node: str, *, force: bool = False) -> bool:
        current = self._one(node)
        check_resume_allowed(current, force)
        if current.state in ("drained", "draining") or (current.state == "down" and (current.ours or force)):
            self._run("update", f"nodename={node}", "state=RESUME")
            return True
        return False

    def admit(self, node: str, certificate: Mapping[str, Any], *, force: bool = False) -> None:
        """Slurm has no labels for this: admitting is resuming (our drain only, unless `force`)."""
        check_certificate_node(node, certificate)
        self.resume(node, force=force)
