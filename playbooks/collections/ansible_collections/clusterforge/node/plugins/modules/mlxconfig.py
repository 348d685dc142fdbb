#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlxconfig
short_description: NVIDIA/Mellanox NIC firmware configuration through mlxconfig (or mstconfig)
description:
  - Queries C(<tool> -d DEVICE -e q KEY...), compares the I(next boot) value of each key with the desired one,
    and sets only the differing keys with C(<tool> -y -d DEVICE set KEY=VALUE ...).
  - A desired value matches the tool's C(name(number)) output by name, by number or in full (case-insensitive);
    booleans match C(True(1))/C(False(0)).
  - Firmware configuration takes effect only after a firmware reset (mlxfwreset) or a reboot. Keys whose
    running (current) value differs from the next-boot value are returned in RV(pending).
  - Every command runs under O(timeout) seconds.
options:
  device:
    description: Device as the tool accepts it (PCI address such as C(0000:18:00.0), or an MST device).
    type: str
    required: true
  settings:
    description: 'Firmware keys and desired values, e.g. C({PCI_WR_ORDERING: per_mkey, ATS_ENABLED: false}).'
    type: dict
    required: true
  tool:
    description: C(mlxconfig) (NVIDIA MFT) or C(mstconfig) (mstflint, same syntax).
    type: str
    default: mlxconfig
  timeout:
    description: Timeout in seconds for each command.
    type: int
    default: 60
author:
  - clusterforge
"""

EXAMPLES = r"""
- name: Firmware settings on rail 0
  clusterforge.node.mlxconfig:
    device: "0000:18:00.0"
    settings:
      PCI_WR_ORDERING: per_mkey
"""

RETURN = r"""
pending:
  description: Keys whose running value differs from the next-boot value (need a firmware reset or reboot).
  returned: always
  type: list
  elements: str
values:
  description: Parsed values per key (default, current, next_boot) after the run.
  returned: always
  type: dict
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.node.plugins.module_utils.run import CommandTimeout, run_cmd

_VALUE = re.compile(r"^(?P<name>[^()]*?)\s*(?:\((?P<num>-?\w+)\))?$")


def parse_query(output, keys):
    """Return {KEY: {"default", "current", "next_boot"}} for the requested keys.

    Lines look like ``*  PCI_WR_ORDERING   per_mkey(0)   force_relax(1)   force_relax(1)`` with ``-e``
    (default, current, next boot) or ``   PCI_WR_ORDERING   per_mkey(0)`` without it (next boot only).
    """
    found = {}
    wanted = {k.upper() for k in keys}
    for line in output.splitlines():
        tokens = line.replace("*", " ").split()
        if len(tokens) < 2 or tokens[0].upper() not in wanted:
            continue
        vals = tokens[1:]
        if len(vals) >= 3:
            found[tokens[0].upper()] = dict(default=vals[-3], current=vals[-2], next_boot=vals[-1])
        else:
            found[tokens[0].upper()] = dict(default=None, current=vals[-1], next_boot=vals[-1])
    return found


def matches(tool_value, desired):
    """True when the tool's value (``name(num)`` or bare) equals the desired value by name, number or text."""
    if tool_value is None:
        return False
    want = str(desired).strip().lower()
    if isinstance(desired, bool):
        want = "true" if desired else "false"
    have = tool_value.strip().lower()
    if have == want:
        return True
    m = _VALUE.match(have)
    if not m:
        return False
    name, num = m.group("name"), m.group("num")
    aliases = {name}
    if num is not None:
        aliases.add(num)
    if name in ("true", "false"):
        aliases.add("1" if name == "true" else "0")
        aliases.add("yes" if name == "true" else "no")
    if want in ("yes", "no", "on", "off"):
        want = "true" if want in ("yes", "on") else "false"
    return want in aliases


def setting_text(desired):
    if isinstance(desired, bool):
        return "1" if desired else "0"
    return str(desired)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="str", required=True),
            settings=dict(type="dict", required=True),
            tool=dict(type="str", default="mlxconfig"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    device, settings, tool = p["device"], p["settings"], p["tool"]
    keys = sorted(k.upper() for k in settings)
    desired = {k.upper(): v for k, v in settings.items()}
    if not keys:
        module.exit_json(changed=False, pending=[], values={})

    def run(argv, what):
        try:
            rc, out, err = run_cmd(argv, p["timeout"])
        except CommandTimeout as exc:
            module.fail_json(msg="%s %s: %s" % (device, what, exc))
        except OSError as exc:
            module.fail_json(msg="%s: cannot run %s: %s" % (device, tool, exc))
        if rc != 0:
            module.fail_json(msg="%s %s failed (rc=%s): %s" % (device, what, rc, (err or out).strip()[-2000:]), cmd=argv)
        return out

    def query():
        out = run([tool, "-d", device, "-e", "q"] + keys, "query")
        values = parse_query(out, keys)
        missing = [k for k in keys if k not in values]
        if missing:
            module.fail_json(msg="%s: %s does not report %s (unknown key or not exposed by this firmware)"
                             % (device, tool, ", ".join(missing)), stdout=out)
        return values

    values = query()
    differing = [k for k in keys if not matches(values[k]["next_boot"], desired[k])]
    before = "".join("%s %s: %s\n" % (device, k, values[k]["next_boot"]) for k in differing)
    after = "".join("%s %s: %s\n" % (device, k, setting_text(desired[k])) for k in differing)

    if differing and not module.check_mode:
        run([tool, "-y", "-d", device, "set"] + ["%s=%s" % (k, setting_text(desired[k])) for k in differing], "set")
        values = query()
        still = [k for k in differing if not matches(values[k]["next_boot"], desired[k])]
        if still:
            module.fail_json(msg="%s: after set, next-boot value still differs for %s" % (device, ", ".join(still)),
                             values=values)

    pending = []
    for k in keys:
        current = values[k]["current"]
        nxt = setting_text(desired[k]) if (module.check_mode and k in differing) else values[k]["next_boot"]
        if not matches(current, nxt) and current != nxt:
            pending.append("%s %s: running %s, next boot %s" % (device, k, current, nxt))

    result = dict(changed=bool(differing), pending=pending, values=values, differing=differing)
    if differing:
        result["diff"] = dict(before_header="%s firmware (next boot)" % device, after_header="%s firmware (next boot)" % device,
                              before=before, after=after)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
