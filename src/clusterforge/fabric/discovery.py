"""A recorded discovery: one file or a folder of files, each recognised by its content.

- `lldpctl -f json|json0` or plain `lldpctl` output of one device, in a file named for it
  (``gpu-0001.json``, ``gpu-0001.lldp``, ``rack1-leaf-0.txt``: the name before the first dot);
- `ibnetdiscover` (topology file), `iblinkinfo` output: a whole InfiniBand subnet.

Sub-folders are not read here: `switch-state/` and `sm/` hold recorded switch and SM state, which the flow
of `fabric check` (flows/fabric_check.py) reads with switchcfg's read-backs.

Bad input (an unreadable or unrecognised file, a parse error, an LLDP file named for no planned device)
is an `InputError` naming the file; nothing is half-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import InputError, Problem
from clusterforge.fabric.compare import Coverage
from clusterforge.fabric.model import ObservedLink
from clusterforge.fabric.observed import from_iblinkinfo, from_ibnetdiscover, from_lldp, switch_guids
from clusterforge.hw import ParseError, iblinkinfo, ibnetdiscover, lldp

MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass
class Discovery:
    links: list[ObservedLink] = field(default_factory=list)
    lldp_devices: set[str] = field(default_factory=set)
    ib_views: list[str] = field(default_factory=list)  # files holding a whole-subnet view
    switch_guids: dict[str, str] = field(default_factory=dict)  # switch name -> GUID (ibnetdiscover views)


def kind_of(text: str) -> str:
    head = text.lstrip()[:4096]
    if head.startswith("{"):
        return "lldp"
    lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
    if any(ln == "LLDP neighbors:" for ln in lines[:4]):
        return "lldp"
    if any(ln.startswith(("switchguid=", "caguid=", "Switch\t", "# Topology file")) for ln in lines):
        return "ibnetdiscover"
    if any(ln.startswith(("CA: ", "Switch: 0x")) for ln in lines):
        return "iblinkinfo"
    return ""


def _problem(path: Path, expected: str, found: str, fix: str) -> Problem:
    return Problem(str(path), "", expected, found, fix)


def load(path: Path, known: set[str]) -> Discovery:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        raise InputError(
            [_problem(path, "a discovery file or folder", "nothing there", "give an existing path")]
        )
    if not files:
        raise InputError(
            [_problem(path, "discovery files", "an empty folder", "record lldpctl/ibnetdiscover outputs")]
        )
    d = Discovery()
    problems: list[Problem] = []
    for f in files:
        try:
            if f.stat().st_size > MAX_FILE_BYTES:
                problems.append(_problem(f, f"at most {MAX_FILE_BYTES} bytes", "a larger file", "split it"))
                continue
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(
                _problem(f, "a readable UTF-8 text file", type(exc).__name__, "re-record the output")
            )
            continue
        kind = kind_of(text)
        try:
            if kind == "lldp":
                device = f.name.split(".", 1)[0]
                if device not in known:
                    problems.append(
                        _problem(
                            f,
                            "an LLDP output named for a planned node or switch",
                            f"{device!r}",
                            "name the file <device>.json (the device's name in the plan)",
                        )
                    )
                    continue
                d.links += from_lldp(device, lldp.parse(text), known, f.name)
                d.lldp_devices.add(device)
            elif kind == "ibnetdiscover":
                topo = ibnetdiscover.parse(text)
                d.links += from_ibnetdiscover(topo, f.name)
                d.switch_guids.update(switch_guids(topo))
                d.ib_views.append(f.name)
            elif kind == "iblinkinfo":
                d.links += from_iblinkinfo(iblinkinfo.parse(text), f.name)
                d.ib_views.append(f.name)
            else:
                problems.append(
                    _problem(
                        f,
                        "lldpctl (json, json0 or plain), ibnetdiscover or iblinkinfo output",
                        "an unrecognised file",
                        "record one of those outputs or remove the file",
                    )
                )
        except ParseError as exc:
            problems.append(_problem(f, f"complete {kind} output", str(exc), "re-record the output whole"))
    if problems:
        raise InputError(problems, f"discovery {path}")
    return d


def coverage(
    d: Discovery, fabrics: dict[str, str], switches_of: dict[str, set[str]], nodes_of: dict[str, list[str]]
) -> Coverage:
    """Which fabrics the discovery reads whole, which devices reported themselves, and what is unchecked."""
    seen = {x.device for o in d.links for x in (o.a, o.b)}
    whole = frozenset(
        f for f, t in fabrics.items() if t == "infiniband" and d.ib_views and switches_of[f] & seen
    )
    errors: list[str] = []
    for f, t in fabrics.items():
        if f in whole:
            continue
        if t == "infiniband":
            errors.append(
                f"fabric {f}: no ibnetdiscover/iblinkinfo view of it in the discovery - not checked"
            )
            continue
        missing = [n for n in nodes_of.get(f, []) if n not in d.lldp_devices]
        if missing:
            shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
            errors.append(
                f"fabric {f}: no LLDP output for {len(missing)} planned node(s) ({shown}) - "
                "their links not checked"
            )
    return Coverage(whole, frozenset(d.lldp_devices), tuple(errors))


def unchecked_error(n: int) -> str:
    return (
        f"{n} planned link(s) not checked: no discovery covers them (switch-to-switch links need the "
        "switches' own LLDP outputs or an InfiniBand view)"
    )
