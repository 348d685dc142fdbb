"""The pool-manager interface, node states, and the drain-reason rules every manager follows.

Ownership of a drain is carried by its reason: clusterforge only ever resumes a node whose drain
reason starts with `clusterforge:`. A node drained by someone else (an admin, NHC, Slurm itself) stays
drained unless the caller forces it, and a node held for review (flapping) also needs `force`.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterforge.errors import ClusterforgeError, ExitCode

PREFIX = "clusterforge:"
HOLD_REASON = "clusterforge: held for review (flapping)"
# slurmdbd keeps a node's reason in a `tinytext` column (255 bytes, event_table in
# src/plugins/accounting_storage/mysql/accounting_storage_mysql.c); stay well below it, ASCII only.
MAX_REASON_LEN = 200
STATES = ("idle", "busy", "draining", "drained", "down", "unknown")


class PoolError(ClusterforgeError):
    """The pool manager could not do what was asked (command failed, timed out, API error)."""

    exit_code = ExitCode.TOOL_FAILED


class ResumeRefused(ClusterforgeError):
    """The node is drained for a reason clusterforge does not own (or is held for review)."""

    exit_code = ExitCode.NOT_AS_DECLARED

    def __init__(self, node: str, reason: str, why: str) -> None:
        self.node, self.reason = node, reason
        super().__init__(
            f"{node}: not resumed: {why} (drain reason: {reason!r}). "
            f"Use --force after checking the node by hand."
        )


@dataclass(frozen=True)
class NodeState:
    """What the pool manager says about a node.

    state: idle (schedulable, free) | busy (schedulable, running work) | draining (no new work, work still
    running) | drained | down | unknown. `raw` is the manager's own word for it (e.g. `IDLE+DRAIN`).
    """

    node: str
    state: str
    reason: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    raw: str = ""

    @property
    def schedulable(self) -> bool:
        return self.state in ("idle", "busy")

    @property
    def ours(self) -> bool:
        """Drained or draining by clusterforge."""
        return self.reason.startswith(PREFIX)

    @property
    def held(self) -> bool:
        return self.reason.startswith(HOLD_REASON)

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "state": self.state,
            "reason": self.reason,
            "labels": dict(self.labels),
            "raw": self.raw,
        }


_UNSAFE = re.compile(r"[\"'`\\\x00-\x1f\x7f]")
_NON_ASCII = re.compile(r"[^\x20-\x7e]")


def sanitize_reason(reason: str, *, limit: int = MAX_REASON_LEN) -> str:
    """A drain reason safe for any manager: `clusterforge: ...`, one line, no quotes, ASCII, at most `limit`.

    Quotes, backslashes, control characters (newlines, tabs) become spaces; runs of spaces collapse;
    `=` becomes `:` (a reason is one `Reason=` token, and `scontrol show node` prints it unquoted).
    """
    text = _UNSAFE.sub(" ", reason)
    text = _NON_ASCII.sub("?", text).replace("=", ":")
    text = re.sub(r"\s+", " ", text).strip()
    if not text.startswith(PREFIX):
        text = f"{PREFIX} {text}" if text else f"{PREFIX} drained"
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


def reason_for_checks(failed: Iterable[str], *, limit: int = MAX_REASON_LEN) -> str:
    """`clusterforge: failed a,b,c (+N more)` within `limit` characters."""
    ids = sorted(dict.fromkeys(failed))
    if not ids:
        return sanitize_reason(f"{PREFIX} not certified", limit=limit)
    head = f"{PREFIX} failed "
    shown: list[str] = []
    for i, cid in enumerate(ids):
        rest = len(ids) - i - 1
        tail = f" (+{rest} more)" if rest else ""
        candidate = ",".join([*shown, cid])
        if len(head + candidate + tail) > limit:
            break
        shown.append(cid)
    more = len(ids) - len(shown)
    text = head + ",".join(shown) + (f" (+{more} more)" if more else "")
    return sanitize_reason(text, limit=limit)


def check_resume_allowed(state: NodeState, force: bool) -> None:
    """Raise ResumeRefused unless clusterforge owns the drain (and it is not a hold), or `force`."""
    if force or state.state not in ("drained", "draining"):
        return
    if not state.ours:
        raise ResumeRefused(state.node, state.reason, "drained by someone else")
    if state.held:
        raise ResumeRefused(state.node, state.reason, "held for review after flapping")


class PoolManager(ABC):
    """One interface over the file registry, Slurm and Kubernetes."""

    name: str = "abstract"

    @abstractmethod
    def status(self, nodes: Iterable[str] | None = None) -> dict[str, NodeState]:
        """State of `nodes` (all known nodes when None); a node the manager does not know is `unknown`."""

    @abstractmethod
    def drain(self, node: str, reason: str, *, force: bool = False) -> bool:
        """Take `node` out of the pool with a `clusterforge:` reason.

        Returns False when it left the node alone because someone else drained it (unless `force`).
        Draining a node clusterforge already drained updates the reason.
        """

    @abstractmethod
    def resume(self, node: str, *, force: bool = False) -> bool:
        """Put `node` back; only a drain clusterforge owns unless `force` (ResumeRefused otherwise).
        Returns False when the node was not drained."""

    @abstractmethod
    def admit(self, node: str, certificate: Mapping[str, Any], *, force: bool = False) -> None:
        """Mark `node` certified (tier, expectation digest) and resume it. The admission policy decides."""


def check_certificate_node(node: str, certificate: Mapping[str, Any]) -> None:
    if certificate.get("node") != node:
        raise PoolError(f"certificate is for {certificate.get('node')!r}, not {node!r}")
    if certificate.get("verdict") != "pass":
        raise PoolError(f"{node}: certificate verdict is {certificate.get('verdict')!r}: only pass admits")


def wait_for(
    manager: PoolManager,
    nodes: Iterable[str],
    states: Iterable[str] = ("drained",),
    *,
    timeout_s: float = 600.0,
    poll_s: float = 5.0,
) -> dict[str, NodeState]:
    """Poll until every node is in one of `states` (e.g. drained: its running jobs ended, before a reboot).

    Raises PoolError naming the nodes still elsewhere when `timeout_s` runs out.
    """

    want, names = set(states), list(nodes)
    deadline = time.monotonic() + timeout_s
    while True:
        current = manager.status(names)
        late = {n: s for n, s in current.items() if s.state not in want}
        if not late:
            return current
        if time.monotonic() >= deadline:
            detail = ", ".join(f"{n} {s.state}" for n, s in sorted(late.items()))
            raise PoolError(
                f"timed out after {timeout_s:.0f} s waiting for {'/'.join(sorted(want))}: {detail}"
            )
        time.sleep(poll_s)
