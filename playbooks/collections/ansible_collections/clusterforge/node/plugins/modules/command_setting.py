#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: command_setting
short_description: Settings read by a probe command and changed by apply commands, with check and diff mode
description:
  - Runs O(probe) (read-only), extracts the current value, compares it with O(desired).
  - When they differ, runs the O(apply) commands (not in check mode) and probes again to verify.
  - 'Reports changed exactly when a value differs; with C(--diff) the diff shows C(name: before) and C(name: after),
    one diff per setting that differs.'
  - With O(settings), one call handles a list of settings (each with the options below, O(timeout) shared) in
    order; settings with the same probe command share one probe run until an apply changes something (then
    every probe runs again), so all rails' QoS costs one task and one probe per rail.
  - Every command runs under O(timeout) seconds; a hung tool fails the host instead of hanging the run.
options:
  settings:
    description:
      - A list of settings, each a dict of O(name), O(probe), O(probe_rc), O(extract), O(aggregate),
        O(missing_value), O(aliases), O(desired), O(compare), O(managed_keys), O(apply) and O(verify)
        (same meanings and defaults). Mutually exclusive with O(name).
    type: list
    elements: dict
  name:
    description: Setting name used in messages and the diff (e.g. C(enp24s0np0 PFC)). Required without O(settings).
    type: str
  probe:
    description: Probe command (argv list, no shell). Required without O(settings).
    type: list
    elements: str
  probe_rc:
    description: Return codes of the probe that count as success.
    type: list
    elements: int
    default: [0]
  extract:
    description:
      - Python regular expression (MULTILINE) applied to the probe output; the value is group 1 if the
        expression has a group, else the whole match. Without it the value is the whole output.
    type: str
  aggregate:
    description:
      - C(first) uses the first match; C(unique) uses every match (or every non-empty output line when
        O(extract) is not set), de-duplicated, sorted and joined with C(,) - e.g. one line per GPU.
    type: str
    choices: [first, unique]
    default: first
  missing_value:
    description: Value when O(extract) does not match.
    type: str
    default: "<none>"
  aliases:
    description: Map raw values to canonical ones before comparing (applied to each value before aggregation).
    type: dict
    default: {}
  desired:
    description: Desired (canonical) value. Whitespace is normalised on both sides. Required without O(settings).
    type: str
  compare:
    description:
      - C(equal) - the value must equal O(desired).
      - C(cmdline) - the value is a kernel command line; every parameter of O(desired) must be in effect
        (last occurrence wins; hugepagesz/hugepages pairs) and no parameter with a key in O(managed_keys)
        that O(desired) does not contain may remain.
    type: str
    choices: [equal, cmdline]
    default: equal
  managed_keys:
    description: With O(compare=cmdline), the parameter keys this setting owns.
    type: list
    elements: str
    default: []
  apply:
    description: Commands (argv lists) run in order to set the desired value. Required without O(settings).
    type: list
    elements: list
  verify:
    description: Probe again after applying and fail when the value is still not the desired one.
    type: bool
    default: true
  timeout:
    description: Timeout in seconds for each command.
    type: int
    default: 30
author:
  - clusterforge
"""

EXAMPLES = r"""
- name: PFC on priority 3 only
  clusterforge.node.command_setting:
    name: enp24s0np0 PFC enabled per priority
    probe: [mlnx_qos, -i, enp24s0np0]
    extract: '^\s*enabled\s+((?:\d\s+){7}\d)\s*$'
    desired: "0 0 0 1 0 0 0 0"
    apply:
      - [mlnx_qos, -i, enp24s0np0, --pfc, "0,0,0,1,0,0,0,0"]

- name: Trust and PFC on two rails, one probe per rail
  clusterforge.node.command_setting:
    settings:
      - name: enp24s0np0 priority trust state
        probe: [mlnx_qos, -i, enp24s0np0]
        extract: '^Priority trust state:\s*(\S+)'
        desired: dscp
        apply: [[mlnx_qos, -i, enp24s0np0, --trust, dscp]]
      - name: enp24s0np0 PFC enabled per priority
        probe: [mlnx_qos, -i, enp24s0np0]
        extract: '^\s*enabled\s+((?:\d\s+){7}\d)\s*$'
        desired: "0 0 0 1 0 0 0 0"
        apply: [[mlnx_qos, -i, enp24s0np0, --pfc, "0,0,0,1,0,0,0,0"]]
"""

RETURN = r"""
before:
  description: Value before (one setting).
  returned: without settings
  type: str
after:
  description: Value after (the desired value when changed; one setting).
  returned: without settings
  type: str
settings:
  description: Per setting, in order, C(name), C(before), C(after) and C(changed).
  returned: with settings
  type: list
  elements: dict
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.node.plugins.module_utils import cmdline as kcmdline
from ansible_collections.clusterforge.node.plugins.module_utils.run import CommandTimeout, run_cmd


#: the per-setting options and their defaults (the module's top-level options, or each item of `settings`)
SETTING_SPEC = dict(
    name=dict(type="str"),
    probe=dict(type="list", elements="str"),
    probe_rc=dict(type="list", elements="int", default=[0]),
    extract=dict(type="str"),
    aggregate=dict(type="str", choices=["first", "unique"], default="first"),
    missing_value=dict(type="str", default="<none>"),
    aliases=dict(type="dict", default={}),
    desired=dict(type="str"),
    compare=dict(type="str", choices=["equal", "cmdline"], default="equal"),
    managed_keys=dict(type="list", elements="str", default=[]),
    apply=dict(type="list", elements="list"),
    verify=dict(type="bool", default=True),
)
REQUIRED = ("name", "probe", "desired", "apply")


def _norm(value):
    return " ".join(str(value).split())


def _value(p, output):
    aliases = {_norm(k): _norm(v) for k, v in (p["aliases"] or {}).items()}

    def canon(v):
        v = _norm(v)
        return aliases.get(v, v)

    if p["extract"]:
        rx = re.compile(p["extract"], re.MULTILINE)
        matches = [m.group(1) if rx.groups else m.group(0) for m in rx.finditer(output)]
    else:
        matches = output.splitlines() if p["aggregate"] == "unique" else [output]
    matches = [canon(m) for m in matches if _norm(m) != ""]
    if not matches:
        return _norm(p["missing_value"])
    if p["aggregate"] == "unique":
        return ",".join(sorted(set(matches)))
    return matches[0]


class _Runner:
    """Runs the commands of one module call; probe outputs are shared by argv until an apply runs."""

    def __init__(self, module, result):
        self.module = module
        self.result = result
        self.probes = {}

    def run(self, name, argv, rcs, what):
        try:
            rc, out, err = run_cmd(argv, self.module.params["timeout"])
        except CommandTimeout as exc:
            self.fail(msg="%s: %s %s" % (name, what, exc))
        except OSError as exc:
            self.fail(msg="%s: cannot run %s: %s" % (name, argv[0], exc))
        if rc not in rcs:
            self.fail(
                msg="%s: %s failed (rc=%s): %s" % (name, what, rc, (err or out).strip()[-2000:]),
                rc=rc,
                stdout=out,
                stderr=err,
                cmd=argv,
            )
        return out

    def probe(self, p, what="probe"):
        key = (tuple(str(a) for a in p["probe"]), tuple(p["probe_rc"]))
        if key not in self.probes:
            self.probes[key] = self.run(p["name"], list(key[0]), p["probe_rc"], what)
        return self.probes[key]

    def fail(self, **kw):
        self.result.update(kw)
        self.result["failed"] = True
        self.module.fail_json(**self.result)


def _converge(runner, p, check_mode):
    """One setting: (entry, diff lines or None). Applies and verifies unless in check mode."""
    name = p["name"]
    desired = _norm(p["desired"])

    def in_state(value):
        if p["compare"] == "cmdline":
            return not kcmdline.missing(value, desired) and not kcmdline.stale(value, desired, p["managed_keys"])
        return value == desired

    before = _value(p, runner.probe(p))
    entry = dict(name=name, before=before, after=before, changed=False)
    if in_state(before):
        return entry
    after = kcmdline.expected(before, desired, p["managed_keys"]) if p["compare"] == "cmdline" else desired
    entry.update(changed=True, after=after)
    if p["compare"] == "cmdline":
        entry["missing"] = kcmdline.missing(before, desired)
        entry["stale"] = kcmdline.stale(before, desired, p["managed_keys"])
    if check_mode:
        return entry
    outputs = []
    for argv in p["apply"]:
        cmd = [str(a) for a in argv]
        outputs.append(runner.run(name, cmd, [0], "apply %s" % " ".join(cmd)))
    entry["apply_stdout"] = outputs
    runner.probes.clear()  # an apply may change what any probe reports
    if p["verify"]:
        now = _value(p, runner.probe(p, "verify probe"))
        if not in_state(now):
            runner.fail(
                msg="%s: applied, but the probe still reports %r (wanted %r)" % (name, now, desired),
                name=name,
                before=before,
                after=after,
            )
    return entry


def _setting(module, raw, where):
    """An item of `settings` with the per-setting defaults filled in and its types checked."""
    p = {}
    for key, spec in SETTING_SPEC.items():
        value = raw.get(key, spec.get("default"))
        if value is None and key in REQUIRED:
            module.fail_json(msg="%s: %s is required" % (where, key))
        p[key] = value
    unknown = sorted(set(raw) - set(SETTING_SPEC))
    if unknown:
        module.fail_json(msg="%s: unsupported option(s) %s" % (where, ", ".join(unknown)))
    for key in ("probe", "apply", "probe_rc", "managed_keys"):
        if not isinstance(p[key], list):
            module.fail_json(msg="%s: %s must be a list" % (where, key))
    if not all(isinstance(a, list) for a in p["apply"]):
        module.fail_json(msg="%s: apply must be a list of argv lists" % where)
    for key in ("aggregate", "compare"):
        if p[key] not in SETTING_SPEC[key]["choices"]:
            module.fail_json(msg="%s: %s must be one of %s" % (where, key, ", ".join(SETTING_SPEC[key]["choices"])))
    p["name"], p["desired"] = str(p["name"]), str(p["desired"])
    p["probe_rc"] = [int(x) for x in p["probe_rc"]]
    return p


def main():
    module = AnsibleModule(
        argument_spec=dict(settings=dict(type="list", elements="dict"), timeout=dict(type="int", default=30), **SETTING_SPEC),
        mutually_exclusive=[("settings", "name")],
        required_one_of=[("settings", "name")],
        required_by={"name": ("probe", "desired", "apply")},
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False)
    runner = _Runner(module, result)
    if params["settings"] is None:
        p = {k: params[k] for k in SETTING_SPEC}
        entry = _converge(runner, p, module.check_mode)
        result.update({k: v for k, v in entry.items() if k != "changed"}, changed=entry["changed"])
        if entry["changed"]:
            name = entry["name"]
            result["diff"] = dict(
                before_header=name,
                after_header=name,
                before="%s: %s\n" % (name, entry["before"]),
                after="%s: %s\n" % (name, entry["after"]),
            )
        module.exit_json(**result)

    settings = [_setting(module, raw, "settings[%d]" % i) for i, raw in enumerate(params["settings"])]
    entries = result["settings"] = []
    for p in settings:
        entries.append(_converge(runner, p, module.check_mode))
    changed = [e for e in entries if e["changed"]]
    result["changed"] = bool(changed)
    if changed:  # one diff per setting that differs, as a loop of single settings would report them
        result["diff"] = [
            dict(
                before_header=e["name"],
                after_header=e["name"],
                before="%s: %s\n" % (e["name"], e["before"]),
                after="%s: %s\n" % (e["name"], e["after"]),
            )
            for e in changed
        ]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
