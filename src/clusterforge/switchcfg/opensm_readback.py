"""A running OpenSM's configuration files read back and compared with what `render_opensm` gives the fabric
(switchcfg/opensm.py: the same plan, root GUIDs and SM priority).

Inputs are the files' texts by name (opensm.conf, partitions.conf, qos-policy.conf, root_guids.conf), as
copied from the SM host; opensm.conf is required, the others are optional and what was not given is listed
as not checked (never passed). Compared:

- opensm.conf: every option clusterforge's opensm.conf sets has that value (a running file written by
  ``opensm -c`` holds every option OpenSM knows; the ones clusterforge does not set are not judged). The
  options that name another file (partition_config_file, qos_policy_file, root_guid_file) are judged by the
  file's name, not its folder: the SM host's layout is its own (/etc/opensm, /etc/rdma, ...), and the path
  it uses is reported;
- partitions.conf: the Default partition's rule and every other rule clusterforge renders are present
  (rules compared without whitespace; other partitions, e.g. tenants', are not judged);
- qos-policy.conf: the same policy lines (comments dropped, whitespace runs collapsed), in order;
- root_guids.conf (when the roots' GUIDs are known from a discovery): the same GUIDs, in any order.

A given file that the running opensm.conf does not point at is not checked: it is not what the SM reads.
OpenSM rereads partitions.conf and qos-policy.conf on every heavy sweep (osm_state_mgr.c: the P_Key manager
and QoS setup), which SIGHUP starts (man/opensm.8.in); most opensm.conf options need a restart.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from clusterforge.hw.opensm_conf import NULL, parse, parse_guids, parse_partitions, qos_policy_lines
from clusterforge.switchcfg.opensm import DEFAULT_PKEY, PRIMARY_SM_PRIORITY, render_opensm, top_tier
from clusterforge.switchcfg.policy import fabric_doc
from clusterforge.switchcfg.readback import Readback

FILES = ("opensm.conf", "partitions.conf", "qos-policy.conf", "root_guids.conf")
#: opensm.conf options that name one of the other files
PATH_OPTIONS = {
    "partition_config_file": "partitions.conf",
    "qos_policy_file": "qos-policy.conf",
    "root_guid_file": "root_guids.conf",
}
RESTART = "and restart OpenSM"
SWEEP = "then send OpenSM SIGHUP (its heavy sweep rereads the file) or restart it"


@dataclass
class SmReadback(Readback):
    """`subject` is the fabric; `paths`: file name -> the path the running SM reads it at."""

    paths: dict[str, str] = field(default_factory=dict)


def _options(out: SmReadback, want: dict[str, str], have: dict[str, str]) -> None:
    for key, value in want.items():
        found = have.get(key)
        shown = "unset" if found is None else (found or "empty")
        fname = PATH_OPTIONS.get(key)
        if fname is None:
            if found != value:
                out.add(f"opensm.conf {key}", value, shown, f"set `{key} {value}` in opensm.conf {RESTART}")
            continue
        if found is None or found in ("", NULL):
            out.add(
                f"opensm.conf {key}",
                f"the path of {fname} ({value})",
                shown,
                f"set `{key} {value}` {RESTART}",
            )
        elif PurePosixPath(found).name != fname:
            out.add(
                f"opensm.conf {key}",
                f"a file named {fname} ({value})",
                found,
                f"install clusterforge's {fname} and point {key} at it {RESTART}",
            )
        else:
            out.paths[fname] = found


def _partitions(out: SmReadback, want: str, have: str) -> None:
    got = parse_partitions(have)
    keys = {r.key for r in got.rules}
    for r in parse_partitions(want).rules:
        if r.key in keys:
            continue
        same = [g.text for g in got.rules if g.name == r.name or (r.pkey is not None and g.pkey == r.pkey)]
        if same:
            found = " ; ".join(same) + " ;"
        elif r.pkey == DEFAULT_PKEY:
            found = "no rule for the Default partition: OpenSM gives end ports limited membership"
        else:
            found = f"no rule for partition {r.name}"
        out.add(
            f"partitions.conf {r.name}", r.text + " ;", found, f"put this rule in partitions.conf, {SWEEP}"
        )


def _qos_policy(out: SmReadback, want: str, have: str) -> None:
    a, b = qos_policy_lines(want), qos_policy_lines(have)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out.add(
            f"qos-policy.conf line {j1 + 1}",
            " / ".join(a[i1:i2]) or "nothing",
            " / ".join(b[j1:j2]) or "nothing",
            f"replace qos-policy.conf with clusterforge's (fabric sm-config), {SWEEP}",
        )


def _root_guids(out: SmReadback, roots: list[str], want: str, have: str) -> None:
    planned = dict(zip(parse_guids(want), roots, strict=True))  # render_opensm writes them in `roots` order
    got = set(parse_guids(have))
    fix = f"write the top tier's GUIDs into root_guids.conf (fabric sm-config --discovery) {RESTART}"
    for g, name in planned.items():
        if g not in got:
            out.add(f"root_guids.conf {name}", f"0x{g:016x}", "absent", fix)
    for g in sorted(got - set(planned)):
        out.add(
            f"root_guids.conf 0x{g:016x}", "not listed (not a top-tier switch of the plan)", "listed", fix
        )


def compare_opensm(
    plan_doc: dict[str, Any],
    fabric: str,
    running: Mapping[str, str],
    root_guids: Mapping[str, str] | None = None,
    sm_priority: int | None = None,
    roots_unknown: str | None = None,
) -> SmReadback:
    """The running SM's files (name -> text) of InfiniBand fabric `fabric` against its rendered
    configuration. ValueError for a file name not in FILES, no opensm.conf, or what render_opensm refuses
    (not InfiniBand, a priority outside 0..15, roots missing from `root_guids`); hw.ParseError (a ValueError)
    for a file that cannot be read as what it is named. `roots_unknown`: why the roots' GUIDs are unknown when
    `root_guids` is None (default: no discovery was given)."""
    unknown = sorted(set(running) - set(FILES))
    if unknown:
        raise ValueError(f"unknown file(s) {', '.join(unknown)}: the files are {', '.join(FILES)}")
    if "opensm.conf" not in running:
        raise ValueError("no opensm.conf: it says which other files the SM reads")
    prio = PRIMARY_SM_PRIORITY if sm_priority is None else sm_priority
    want = render_opensm(plan_doc, fabric, root_guids=root_guids, sm_priority=prio)
    want_opts = parse(want["opensm.conf"]).options
    out = SmReadback(fabric)
    _options(out, want_opts, parse(running["opensm.conf"]).options)
    out.checked.append(f"opensm.conf ({len(want_opts)} options clusterforge sets)")
    f = fabric_doc(plan_doc, fabric)
    for fname in FILES[1:]:
        if fname not in want:  # root_guids.conf without the roots' GUIDs, or with no tree
            roots = top_tier(f)
            why = "the plan has one switch tier: no fat-tree roots"
            if roots and root_guids is None:
                why = roots_unknown or "no discovery given: the roots' GUIDs are unknown"
            if roots or fname in running:
                out.not_checked.append(f"{fname} ({why})")
            continue
        if fname not in running:
            out.not_checked.append(f"{fname} (not given)")
            continue
        if fname not in out.paths:
            out.not_checked.append(f"{fname} (the running opensm.conf does not read a file of that name)")
            continue
        if fname == "partitions.conf":
            _partitions(out, want[fname], running[fname])
        elif fname == "qos-policy.conf":
            _qos_policy(out, want[fname], running[fname])
        else:
            _root_guids(out, top_tier(f), want[fname], running[fname])
        out.checked.append(fname)
    return out
