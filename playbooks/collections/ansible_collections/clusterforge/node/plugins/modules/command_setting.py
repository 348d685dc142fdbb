#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: command_setting
short_description: A setting read by a probe command and changed by apply commands, with check and diff mode
description:
  - Runs O(probe) (read-only), extracts the current value, compares it with O(desired).
  - When they differ, runs the O(apply) commands (not in check mode) and probes again to verify.
  - 'Reports changed exactly when the value differs; with C(--diff) the diff shows C(name: before) and C(name: after).'
  - Every command runs under O(timeout) seconds; a hung tool fails the host instead of hanging the run.
options:
  name:
    description: Setting name used in messages and the diff (e.g. C(enp24s0np0 PFC)).
    type: str
    required: true
  probe:
    description: Probe command (argv list, no shell).
    type: list
    elements: str
    required: true
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
    description: Desired (canonical) value. Whitespace is normalised on both sides.
    type: str
    required: true
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
    description: Commands (argv lists) run in order to set the desired value.
    type: list
    elements: list
    required: true
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
"""

RETURN = r"""
before:
  description: Value before.
  returned: always
  type: str
after:
  description: Value after (the desired value when changed).
  returned: always
  type: str
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.node.plugins.module_utils import cmdline as kcmdline
from ansible_collections.clusterforge.node.plugins.module_utils.run import CommandTimeout, run_cmd


def _norm(value):
    return " ".join(str(value).split())


def _value(module, output):
    p = module.params
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


def _run(module, argv, rcs, what):
    try:
        rc, out, err = run_cmd(argv, module.params["timeout"])
    except CommandTimeout as exc:
        module.fail_json(msg="%s: %s %s" % (module.params["name"], what, exc))
    except OSError as exc:
        module.fail_json(msg="%s: cannot run %s: %s" % (module.params["name"], argv[0], exc))
    if rc not in rcs:
        module.fail_json(
            msg="%s: %s failed (rc=%s): %s" % (module.params["name"], what, rc, (err or out).strip()[-2000:]),
            rc=rc,
            stdout=out,
            stderr=err,
            cmd=argv,
        )
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            probe=dict(type="list", elements="str", required=True),
            probe_rc=dict(type="list", elements="int", default=[0]),
            extract=dict(type="str"),
            aggregate=dict(type="str", choices=["first", "unique"], default="first"),
            missing_value=dict(type="str", default="<none>"),
            aliases=dict(type="dict", default={}),
            desired=dict(type="str", required=True),
            compare=dict(type="str", choices=["equal", "cmdline"], default="equal"),
            managed_keys=dict(type="list", elements="str", default=[]),
            apply=dict(type="list", elements="list", required=True),
            verify=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    name = p["name"]
    desired = _norm(p["desired"])

    def in_state(value):
        if p["compare"] == "cmdline":
            return not kcmdline.missing(value, desired) and not kcmdline.stale(value, desired, p["managed_keys"])
        return value == desired

    def target(value):
        if p["compare"] == "cmdline":
            return kcmdline.expected(value, desired, p["managed_keys"])
        return desired

    before = _value(module, _run(module, p["probe"], p["probe_rc"], "probe"))
    result = dict(changed=False, name=name, before=before, after=before)
    if in_state(before):
        module.exit_json(**result)

    after = target(before)
    result.update(
        changed=True,
        after=after,
        diff=dict(
            before_header=name,
            after_header=name,
            before="%s: %s\n" % (name, before),
            after="%s: %s\n" % (name, after),
        ),
    )
    if p["compare"] == "cmdline":
        result["missing"] = kcmdline.missing(before, desired)
        result["stale"] = kcmdline.stale(before, desired, p["managed_keys"])
    if module.check_mode:
        module.exit_json(**result)

    outputs = []
    for argv in p["apply"]:
        outputs.append(_run(module, [str(a) for a in argv], [0], "apply %s" % " ".join(str(a) for a in argv)))
    result["apply_stdout"] = outputs
    if p["verify"]:
        now = _value(module, _run(module, p["probe"], p["probe_rc"], "verify probe"))
        if not in_state(now):
            result.update(failed=True, msg="%s: applied, but the probe still reports %r (wanted %r)" % (name, now, desired))
            module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
