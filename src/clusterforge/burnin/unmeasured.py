"""Burn-in tests that measured nothing: their tool was missing, crashed, hung, printed output cut short or
not recognised, or never ran because the node's script did not reach it.

Such a test is verdict ``error`` for its node, names the tool and why, and suspects no component: only a
measurement the tool completed (a value, or a failure the tool itself reported, such as perftest's
``Completion with error`` or nccl-tests' ``#wrong`` count) is evidence against hardware
(`verdicts.evaluate` keeps these rows out of the statistics; `Measurement.unmeasured` names the tool).
"""

from __future__ import annotations

from typing import Any

from clusterforge.burnin.model import Measurement, unit_of
from clusterforge.remote.tools import Tool, cannot_certify, cannot_run

#: exit codes of coreutils `timeout` (TERM, then KILL after -k)
RC_TIMEOUT = (124, 137)
TAIL = 160  # characters of the tool's last line kept in the reason


def _tail(out: str, err: str) -> str:
    lines = (err.strip() or out.strip()).splitlines()
    return lines[-1].strip()[:TAIL] if lines else "no output"


def why_unmeasured(rc: int | None, out: str, err: str, usable: bool, timeout_s: float | None = None) -> str:
    """Why a tool's run measured nothing, or ``""`` when it did.

    ``rc`` None: the tool never ran (the node's script did not reach it). A timeout (exit 124/137) measured
    nothing whatever it printed. Otherwise the run measured something exactly when ``usable``: the
    parser found a complete result, or a failure the tool reported itself."""
    if rc is None:
        return "did not run (no output: the node's script did not reach it)"
    if rc in RC_TIMEOUT:
        return f"timed out after {timeout_s:.0f} s" if timeout_s else "timed out"
    if usable:
        return ""
    if rc:
        return f"crashed (exit {rc}: {_tail(out, err)})"
    return f"printed no result it could parse ({_tail(out, err)})"


def not_run(test: str, node: str, tool: Tool, component: str = "", unit: str = "") -> Measurement:
    """A test whose tool is missing: an error naming the tool and its role, no value, no suspect."""
    return Measurement(
        test,
        node,
        component,
        unit=unit or unit_of(test),
        error=cannot_certify(tool),
        detail={"missing": tool.name, "install": tool.install},
    )


def unmeasured(
    test: str,
    node: str,
    tool: str,
    why: str,
    component: str = "",
    peer: str = "",
    detail: dict[str, Any] | None = None,
) -> Measurement:
    """A test whose tool ran but measured nothing (``why``: crashed, timed out …): an error naming the tool,
    no value, no suspect."""
    return Measurement(
        test,
        node,
        component,
        peer,
        unit=unit_of(test),
        error=cannot_run(tool, why),
        detail=(detail or {}) | {"not_run": tool, "why": why},
    )
