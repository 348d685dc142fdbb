"""`clusterforge fabric check`: the cabling against the plan (`fabric.check`) and, where the discovery folder
holds them, the switches' and subnet managers' recorded state against what the plan renders for them
(switchcfg's read-backs, through the reader `fabric switch-readback` and `fabric sm-readback` use), in one
report. A flow because `fabric` and `switchcfg` are independent stages.

A discovery folder DIR may hold, beside the cabling's files:

- ``DIR/switch-state/<switch>/``: a planned RoCE switch's recorded outputs under the names
  `fabric switch-readback` reads (switchcfg/recorded.py: SONiC's or Cumulus Linux's; the OS is the one
  whose files are there - the plan does not name a switch's OS);
- ``DIR/sm/``: the files copied from the subnet manager's host (opensm.conf required, partitions.conf,
  qos-policy.conf, root_guids.conf) for the plan's only InfiniBand fabric, or ``DIR/sm/<fabric>/`` per
  InfiniBand fabric. The roots' GUIDs come from the discovery's ibnetdiscover view, when it has them all.

With a `switch-state/` folder every planned RoCE switch is listed: checked (ok or its deviations) or not
checked (no folder of its own), which counts like a device the cabling discovery lacks (a deviation unless
`--allow-unchecked`); likewise every InfiniBand fabric with an `sm/` folder. Without these folders the
report is the cabling's alone. A folder named for no planned switch or fabric is bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.errors import InputError, Problem
from clusterforge.fabric.check import run
from clusterforge.fabric.model import FabricReport, StateCheck, StateDeviation
from clusterforge.plan.build import Plan
from clusterforge.switchcfg.opensm import top_tier
from clusterforge.switchcfg.policy import fabric_doc
from clusterforge.switchcfg.readback import Readback
from clusterforge.switchcfg.recorded import read_sm, read_switch, switch_os

STATE_DIR = "switch-state"
SM_DIR = "sm"


def check(plan: Plan, discovery: Path, sm_priority: int | None = None) -> FabricReport:
    """The cabling report, with the recorded switch and SM state of `discovery` (a folder) added;
    `sm_priority`: the priority the recorded SM should run at (None: `render_opensm`'s default)."""
    report, d = run(plan, discovery)
    if discovery.is_dir():
        report.switch_state = switch_states(plan.doc, discovery / STATE_DIR) + sm_states(
            plan.doc, discovery / SM_DIR, d.switch_guids, sm_priority
        )
    return report


def _entries(root: Path, holds: str) -> list[Path]:
    if not root.is_dir():
        raise InputError(
            [Problem(str(root), "", f"a folder of {holds}", "not a folder", "make it a folder or remove it")],
            "recorded state",
        )
    return sorted(p for p in root.iterdir() if not p.name.startswith("."))


def _state(r: Readback, kind: str, os: str, folder: Path) -> StateCheck:
    devs = [StateDeviation(d.item, d.expected, d.found, d.fix) for d in r.deviations]
    return StateCheck(r.subject, kind, os, str(folder), devs, list(r.checked), list(r.not_checked))


def switch_states(plan_doc: dict[str, Any], root: Path) -> list[StateCheck]:
    """Every planned RoCE switch, read back from `root`/<switch>/ where it has a folder (none when `root`
    does not exist); InputError for a folder of no planned RoCE switch or outputs that cannot be read."""
    if not root.exists():
        return []
    roce = [str(s[0]) for f in plan_doc["fabrics"] if f["type"] == "roce" for s in f["switches"]]
    planned = set(roce)
    eg = f"e.g. {', '.join(roce[:3])}" if roce else "the plan has no RoCE switch"
    problems = [
        Problem(
            str(p),
            "",
            f"a folder named for a planned RoCE switch ({eg})",
            repr(p.name) + ("" if p.is_dir() else " (a file)"),
            "name the folder as the plan names the switch (cables.csv) or remove it",
        )
        for p in _entries(root, "per-switch folders")
        if not (p.is_dir() and p.name in planned)
    ]
    if problems:
        raise InputError(problems, f"switch state in {root}")
    out: list[StateCheck] = []
    for name in roce:
        folder = root / name
        if not folder.is_dir():
            out.append(StateCheck(name, "switch"))
            continue
        try:
            os = switch_os(folder)
            out.append(_state(read_switch(plan_doc, name, folder, os), "switch", os, folder))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems, "unreadable switch state")
    return out


def sm_states(
    plan_doc: dict[str, Any], root: Path, guids: dict[str, str], sm_priority: int | None = None
) -> list[StateCheck]:
    """Every InfiniBand fabric's SM, read back from `root` (the only fabric's) or `root`/<fabric>/ (none when
    `root` does not exist); `guids`: switch name -> GUID from the discovery, for root_guids.conf."""
    if not root.exists():
        return []
    ib = [str(f["name"]) for f in plan_doc["fabrics"] if f["type"] == "infiniband"]
    entries = _entries(root, "the SM's files, or one folder per InfiniBand fabric")
    dirs = [p for p in entries if p.is_dir()]
    folders: dict[str, Path] = {p.name: p for p in dirs}
    problems: list[Problem] = []
    if not ib:
        problems.append(
            Problem(
                str(root),
                "",
                "an sm/ folder only for a plan with InfiniBand",
                "a RoCE-only plan",
                "remove it",
            )
        )
    elif dirs and len(dirs) < len(entries):
        problems.append(
            Problem(
                str(root),
                "",
                "either the SM's files or one folder per InfiniBand fabric",
                "both files and folders",
                f"move the files into sm/<fabric>/ ({', '.join(ib)})",
            )
        )
    elif not dirs:
        if len(ib) > 1:
            problems.append(
                Problem(
                    str(root),
                    "",
                    f"one folder per InfiniBand fabric ({', '.join(ib)}): the plan has several",
                    "the files of one SM",
                    "move them into sm/<fabric>/",
                )
            )
        folders = {ib[0]: root}
    problems += [
        Problem(
            str(p),
            "",
            f"a folder named for an InfiniBand fabric of the plan ({', '.join(ib)})",
            repr(p.name),
            "name the folder as the spec names the fabric or remove it",
        )
        for p in dirs
        if p.name not in ib
    ]
    if problems:
        raise InputError(problems, f"SM state in {root}")
    out: list[StateCheck] = []
    for name in ib:
        folder = folders.get(name)
        if folder is None:
            out.append(StateCheck(name, "sm"))
            continue
        roots = top_tier(fabric_doc(plan_doc, name))
        lacking = [r for r in roots if r not in guids]
        why = None
        if lacking:
            why = (
                f"the discovery's InfiniBand view lacks top-tier switch(es) {', '.join(lacking[:5])}"
                if guids
                else "no ibnetdiscover output in the discovery: the roots' GUIDs are unknown"
            )
        try:
            r = read_sm(
                plan_doc,
                name,
                folder,
                root_guids=None if lacking else guids,
                sm_priority=sm_priority,
                roots_unknown=why,
            )
        except InputError as exc:
            problems += exc.problems
            continue
        out.append(_state(r, "sm", "opensm", folder))
    if problems:
        raise InputError(problems, "unreadable SM state")
    return out
