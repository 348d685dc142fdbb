#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sysfs
short_description: Manage kernel attribute files (sysfs, /proc/sys, configfs) with check and diff mode
description:
  - Reads each attribute file, compares it with the desired value and writes only the ones that differ.
  - In check mode nothing is written; the result says which attributes would change.
  - With C(--diff) the diff lists every changed attribute as C(name [path]: value), before and after.
  - Paths may be globs (e.g. one file per CPU); each matching file is one attribute.
  - A list of candidate paths manages the first candidate that exists (driver-dependent locations).
options:
  attributes:
    description: Attributes to manage.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Label used in messages and the diff (defaults to the path).
        type: str
      path:
        description: A path or glob, or a list of candidates (the first one that matches is used).
        type: raw
        required: true
      value:
        description: Desired value.
        type: str
        required: true
      compare:
        description:
          - C(exact) compares the stripped file content.
          - C(words) compares whitespace-normalised content (C(4096 87380) equals C(4096<TAB>87380)).
          - C(selected) reads the word in [brackets] of a choice file (e.g. transparent_hugepage/enabled).
        type: str
        choices: [exact, words, selected]
        default: exact
      mkdir:
        description: A directory created (mkdir) before the attribute is written, e.g. a configfs item directory.
        type: str
      missing:
        description: What to do when no path matches.
        type: str
        choices: [fail, warn, ignore]
        default: fail
      readonly:
        description:
          - What to do when the attribute differs but the kernel does not let this process write it
            (e.g. a host-global C(net.core) sysctl seen from a network namespace other than the initial one).
          - C(warn) reports it (not as a change) and goes on; C(fail) fails the host.
        type: str
        choices: [fail, warn]
        default: fail
  verify:
    description: Re-read every written attribute and fail if the kernel did not take the value.
    type: bool
    default: true
author:
  - clusterforge
"""

EXAMPLES = r"""
- name: THP policy
  clusterforge.node.sysfs:
    attributes:
      - name: transparent_hugepage
        path: /sys/kernel/mm/transparent_hugepage/enabled
        value: madvise
        compare: selected
"""

RETURN = r"""
changes:
  description: Attributes that were (or in check mode would be) changed.
  returned: always
  type: list
  elements: dict
unmanaged:
  description: Attributes whose path did not exist (with missing=warn or ignore).
  returned: always
  type: list
  elements: dict
"""

import glob
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule

_GLOB_CHARS = re.compile(r"[*?\[]")
_SELECTED = re.compile(r"\[([^\]]+)\]")


def _expand(path):
    if _GLOB_CHARS.search(path):
        return sorted(glob.glob(path), key=_natural_key)
    return [path] if os.path.exists(path) else []


def _natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _normalise(raw, compare):
    text = raw.strip()
    if compare == "words":
        return " ".join(text.split())
    if compare == "selected":
        m = _SELECTED.search(text)
        return m.group(1) if m else text
    return text


def _read(path):
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def _write(path, value):
    # One write() call on an unbuffered file: sysfs stores take the whole buffer at once.
    # Same flags as a shell `echo value > path` (O_TRUNC is accepted and ignored by sysfs/procfs/configfs).
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode("utf-8"))
    finally:
        os.close(fd)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            attributes=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    name=dict(type="str"),
                    path=dict(type="raw", required=True),
                    value=dict(type="str", required=True),
                    compare=dict(type="str", choices=["exact", "words", "selected"], default="exact"),
                    mkdir=dict(type="str"),
                    missing=dict(type="str", choices=["fail", "warn", "ignore"], default="fail"),
                    readonly=dict(type="str", choices=["fail", "warn"], default="fail"),
                ),
            ),
            verify=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )

    changes = []
    unmanaged = []
    warnings = []
    before_lines = []
    after_lines = []

    plan = []  # (label, path, desired, compare, current or None, mkdir)
    for attr in module.params["attributes"]:
        candidates = attr["path"]
        if isinstance(candidates, str):
            candidates = [candidates]
        elif not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
            module.fail_json(msg="attribute path must be a string or a list of strings: %r" % (attr["path"],))
        desired = _normalise(attr["value"], "words" if attr["compare"] == "words" else "exact")
        mkdir = attr.get("mkdir")
        label = attr.get("name")

        if mkdir and not os.path.isdir(mkdir):
            # configfs: the attribute files appear once the item directory exists.
            parent = os.path.dirname(mkdir.rstrip("/"))
            if not os.path.isdir(parent):
                msg = "%s: cannot create %s, parent %s does not exist" % (label or mkdir, mkdir, parent)
                if attr["missing"] == "fail":
                    module.fail_json(msg=msg)
                unmanaged.append(dict(name=label or mkdir, path=mkdir, reason=msg))
                if attr["missing"] == "warn":
                    warnings.append(msg)
                continue
            path = candidates[0]
            plan.append((label or path, path, desired, attr["compare"], None, mkdir))
            continue

        paths = []
        for cand in candidates:
            paths = _expand(cand)
            if paths:
                break
        if not paths:
            msg = "%s: no such attribute: %s" % (label or candidates[0], ", ".join(candidates))
            if attr["missing"] == "fail":
                module.fail_json(msg=msg)
            unmanaged.append(dict(name=label or candidates[0], path=candidates, reason=msg))
            if attr["missing"] == "warn":
                warnings.append(msg)
            continue
        for path in paths:
            try:
                current = _normalise(_read(path), attr["compare"])
            except OSError as exc:
                module.fail_json(msg="%s: cannot read %s: %s" % (label or path, path, exc))
            if current != desired:
                item_label = label or path
                if label and len(paths) > 1:
                    item_label = "%s [%s]" % (label, path)
                if not os.access(path, os.W_OK):
                    msg = "%s: %s is read-only here (is %r, wanted %r)" % (item_label, path, current, desired)
                    if attr["readonly"] == "fail":
                        module.fail_json(msg=msg)
                    unmanaged.append(dict(name=item_label, path=path, reason=msg))
                    warnings.append(msg)
                    continue
                plan.append((item_label, path, desired, attr["compare"], current, None))

    for label, path, desired, compare, current, mkdir in plan:
        before = "<absent>" if current is None else current
        shown_label = label if label.endswith("]") or label == path else "%s [%s]" % (label, path)
        changes.append(dict(name=label, path=path, before=before, after=desired))
        before_lines.append("%s: %s\n" % (shown_label, before))
        after_lines.append("%s: %s\n" % (shown_label, desired))
        if module.check_mode:
            continue
        try:
            if mkdir and not os.path.isdir(mkdir):
                os.mkdir(mkdir)
            if mkdir:
                # configfs creates the item's attributes with the directory; allow a moment for them.
                deadline = time.monotonic() + 10
                while not os.path.exists(path) and time.monotonic() < deadline:
                    time.sleep(0.1)
            _write(path, desired)
        except OSError as exc:
            module.fail_json(msg="%s: cannot write %r to %s: %s" % (label, desired, path, exc), changes=changes)
        if module.params["verify"]:
            try:
                now = _normalise(_read(path), compare)
            except OSError as exc:
                module.fail_json(msg="%s: cannot re-read %s: %s" % (label, path, exc), changes=changes)
            if now != desired:
                module.fail_json(
                    msg="%s: wrote %r to %s but the kernel reports %r" % (label, desired, path, now),
                    changes=changes,
                )

    result = dict(changed=bool(changes), changes=changes, unmanaged=unmanaged)
    if changes:
        result["diff"] = dict(
            before_header="kernel attributes (before)",
            after_header="kernel attributes (after)",
            before="".join(before_lines),
            after="".join(after_lines),
        )
    if warnings:
        module.warn("; ".join(warnings) if len(warnings) <= 2 else
                    "%d attributes not exposed here: %s" % (len(warnings), "; ".join(warnings)))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
