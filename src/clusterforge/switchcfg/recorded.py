"""Recorded read-back inputs in a folder, parsed and compared: the one reader behind `fabric switch-readback`,
`fabric sm-readback` and the `switch-state/` and `sm/` folders of a `fabric check` discovery.

A switch's folder holds the outputs recorded on it under fixed names: SONiC's `SONIC_FILES` or Cumulus
Linux's `NVUE_FILES` (any subset, at least one); which OS it runs is taken from the names found when not
given (both kinds in one folder is bad input). An SM's folder holds the files copied from its host
(`opensm_readback.FILES`, opensm.conf required). Bad input (no such folder, nothing recorded, a file that
cannot be read as what it is named) is an `InputError` naming the file, what it should hold and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clusterforge.errors import InputError, Problem
from clusterforge.hw import ParseError, nvue_show, sonic_show
from clusterforge.switchcfg.nvue_readback import compare_nvue
from clusterforge.switchcfg.opensm_readback import FILES as SM_FILES
from clusterforge.switchcfg.opensm_readback import SmReadback, compare_opensm
from clusterforge.switchcfg.readback import Readback
from clusterforge.switchcfg.sonic_readback import compare_sonic

# recorded SONiC outputs: file name -> compare_sonic argument
SONIC_FILES = {
    "show-interfaces-status.txt": "status",
    "ecnconfig-l.txt": "ecn",
    "mmuconfig-l.txt": "mmu",
    "show-pfc-counters.txt": "pfc",
    "show-queue-counters.txt": "queues",
}
# recorded Cumulus Linux NVUE JSON trees: file name -> compare_nvue argument
NVUE_FILES = {
    "nv-show-applied.json": "applied",  # nv show --applied -o json (REST GET /nvue_v1/?rev=applied)
    "nv-show-interface.json": "interfaces",  # nv show interface -o json (REST GET /nvue_v1/interface)
}
NVUE_COMMANDS = {"applied": "nv show --applied -o json", "interfaces": "nv show interface -o json"}
OS_FILES = {"sonic": SONIC_FILES, "cumulus": NVUE_FILES}

_PARSERS: dict[str, Callable[[str], object]] = {
    "status": sonic_show.parse_interfaces_status,
    "ecn": lambda t: sonic_show.parse_profiles(t, "ecnconfig -l"),
    "mmu": sonic_show.parse_profiles,
    "pfc": sonic_show.parse_pfc_counters,
    "queues": sonic_show.parse_queue_counters,
    "applied": nvue_show.parse_applied,
    "interfaces": nvue_show.parse_interfaces,
}


def _all_names() -> str:
    return "; ".join(f"{os}: {', '.join(files)}" for os, files in OS_FILES.items())


def switch_os(folder: Path) -> str:
    """The OS whose recorded outputs `folder` holds (sonic or cumulus); InputError when it holds none or
    files of both."""
    found = [os for os, files in OS_FILES.items() if any((folder / f).is_file() for f in files)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(
            [Problem(str(folder), "", f"recorded outputs of one OS ({_all_names()})", "none", "record them")],
            "no switch outputs",
        )
    shown = ", ".join(f.name for f in sorted(folder.iterdir()) if any(f.name in OS_FILES[os] for os in found))
    raise InputError(
        [
            Problem(
                str(folder),
                "",
                "the outputs of one switch OS (sonic or cumulus)",
                f"files of both: {shown}",
                "keep the files of the OS the switch runs",
            )
        ],
        "switch outputs of two OSes",
    )


def read_switch(plan_doc: dict[str, Any], switch: str, folder: Path, os_name: str | None = None) -> Readback:
    """`switch`'s recorded outputs in `folder` (of `os_name`, default: the OS its files are of) against what
    the plan renders for it. InputError for bad input (an unknown OS, nothing recorded, an unreadable or
    unparsable file); ValueError when `switch` is no RoCE switch of the plan."""
    if os_name is None:
        os_name = switch_os(folder)
    files = OS_FILES.get(os_name)
    if files is None:
        raise InputError(
            [Problem("--os", "", "sonic or cumulus", repr(os_name), "name the switch's OS")], "unknown OS"
        )
    got: dict[str, object] = {}
    problems: list[Problem] = []
    for fname, arg in files.items():
        path = folder / fname
        if not path.is_file():
            continue
        try:
            got[arg] = _PARSERS[arg](path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ParseError) as exc:
            what = NVUE_COMMANDS.get(arg, fname.removesuffix(".txt"))
            problems.append(Problem(str(path), "", f"the output of {what}", str(exc), "re-record it"))
    if not got and not problems:
        problems.append(
            Problem(str(folder), "", "one of " + ", ".join(files), "none", "record the switch's outputs")
        )
    if problems:
        raise InputError(problems, "unreadable switch outputs")
    compare = compare_sonic if os_name == "sonic" else compare_nvue
    return compare(plan_doc, switch, **got)  # type: ignore[arg-type]


def read_sm(
    plan_doc: dict[str, Any],
    fabric: str,
    folder: Path,
    root_guids: Mapping[str, str] | None = None,
    sm_priority: int | None = None,
    roots_unknown: str | None = None,
) -> SmReadback:
    """The SM files copied into `folder` (opensm.conf required; partitions.conf, qos-policy.conf,
    root_guids.conf) against what `render_opensm` gives InfiniBand fabric `fabric`. InputError for bad
    input (no folder, no opensm.conf, a file that is not what it is named); ValueError from compare_opensm
    (an unknown fabric, roots missing from `root_guids`). `roots_unknown`: why root_guids.conf is not checked
    when `root_guids` is None (compare_opensm's default reason otherwise)."""
    running: dict[str, str] = {}
    problems: list[Problem] = []
    if not folder.is_dir():
        problems.append(
            Problem(
                str(folder), "", "a folder holding opensm.conf", "no such folder", "copy the SM's files in"
            )
        )
    else:
        for fname in SM_FILES:
            path = folder / fname
            if not path.is_file():
                continue
            try:
                running[fname] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(Problem(str(path), "", f"a readable {fname}", str(exc), "copy it again"))
        if "opensm.conf" not in running and not problems:
            problems.append(
                Problem(
                    str(folder / "opensm.conf"),
                    "",
                    "the running SM's opensm.conf",
                    "absent",
                    "copy it from the SM host (e.g. scp sm-host:/etc/opensm/opensm.conf DIR/)",
                )
            )
    if problems:
        raise InputError(problems, "unreadable SM configuration")
    try:
        return compare_opensm(
            plan_doc,
            fabric,
            running,
            root_guids=root_guids,
            sm_priority=sm_priority,
            roots_unknown=roots_unknown,
        )
    except ParseError as exc:
        raise InputError(
            [
                Problem(
                    str(folder / exc.tool), "", f"OpenSM's {exc.tool}", str(exc), "copy the file the SM reads"
                )
            ],
            "unreadable SM configuration",
        ) from None
