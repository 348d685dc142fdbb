"""Turn a check-mode, diff-mode site.yml run into drift items: one per task that would change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from clusterforge.drift.model import DriftItem


class TaskRun(Protocol):
    """One task result of a playbook run, as `clusterforge.run.ansible.TaskResult` holds it."""

    @property
    def host(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def diff(self) -> list[dict[str, Any]]: ...


class CheckRun(Protocol):
    """A check-mode, diff-mode playbook run (`clusterforge.run.ansible.PlaybookResult`)."""

    @property
    def tasks(self) -> Sequence[TaskRun]: ...


def _text(v: Any) -> str:
    if isinstance(v, dict | list):
        import json

        return json.dumps(v, sort_keys=True)
    return str(v).strip()


def _diff_lines(diffs: list[dict[str, Any]]) -> tuple[str, str]:
    """Before/after of a task's diffs; for file diffs keep only the lines that differ."""
    before, after = [], []
    for d in diffs:
        b, a = d.get("before", ""), d.get("after", "")
        if isinstance(b, str) and isinstance(a, str) and ("\n" in b or "\n" in a):
            bl, al = b.splitlines(), a.splitlines()
            before += [ln for ln in bl if ln not in al]
            after += [ln for ln in al if ln not in bl]
        else:
            if b != "":
                before.append(_text(b))
            if a != "":
                after.append(_text(a))
        if d.get("prepared"):
            after.append(_text(d["prepared"]))
    return "; ".join(before)[:400] or "(absent)", "; ".join(after)[:400] or "(absent)"


def items_from_check_run(res: CheckRun) -> list[DriftItem]:
    out: list[DriftItem] = []
    for t in res.tasks:
        if t.status != "changed":
            continue
        actual, expected = _diff_lines(t.diff)
        role = t.role or "site"
        out.append(
            DriftItem(
                node=t.host,
                setting=t.task,
                expected=expected,
                actual=actual,
                source=f"role {role}: {t.task}",
                fix=f"clusterforge provision --limit {t.host} (role {role}) or clusterforge drift --fix",
            )
        )
    return out
