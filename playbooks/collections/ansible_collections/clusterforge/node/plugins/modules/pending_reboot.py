#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: pending_reboot
short_description: Record why a node needs a reboot (or GPU/NIC firmware reset) in a local fact file
description:
  - Maintains one source's (role's) list of reasons in a JSON local fact file, by default
    C(/etc/ansible/facts.d/clusterforge_pending.fact), read back by fact gathering as
    C(ansible_local.clusterforge_pending).
  - 'File format C({"reboot_required": bool, "reasons": {"<source>": ["reason", ...]}}); a source with no
    reasons is removed; the file is kept (with C(reboot_required=false)) when no reasons remain.'
  - Other sources' reasons are preserved, so roles (and tag-limited runs) update only their own entry.
  - Reasons are derived from the node's state every run (running vs desired), so a reboot clears them on
    the next run. Changed only when this source's reasons change. No timestamps (idempotent).
  - Also maintains the orchestrator's record O(flag_path) (every source's reasons, one per line; absent when
    there are none), which C(playbooks/pending.yml) reads and C(playbooks/reboot.yml) removes after a reboot.
options:
  source:
    description: Who records the reasons (the role name).
    type: str
    required: true
  reasons:
    description: Current reasons (empty list clears this source).
    type: list
    elements: str
    required: true
  path:
    description: Fact file path.
    type: path
    default: /etc/ansible/facts.d/clusterforge_pending.fact
  flag_path:
    description: Pending-reboot record read by the orchestrator (one reason per line); '' to not write it.
    type: path
    default: /var/lib/clusterforge/reboot-required
author:
  - clusterforge
"""

EXAMPLES = r"""
- name: Record pending reboot reasons
  clusterforge.node.pending_reboot:
    source: os_tuning
    reasons: ["kernel command line: missing iommu=pt"]
"""

RETURN = r"""
pending:
  description: Whole file content after the update (what it would be in check mode).
  returned: always
  type: dict
reboot_required:
  description: True when any source has a reason.
  returned: always
  type: bool
reasons:
  description: Every source's reasons, sorted (the lines of O(flag_path)).
  returned: always
  type: list
  elements: str
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def load(path):
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("reasons"), dict):
        return {}
    return doc


def render(doc):
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _read_text(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def _write_atomic(module, path, text):
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".clusterforge_pending.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        module.fail_json(msg="cannot write %s: %s" % (path, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", required=True),
            reasons=dict(type="list", elements="str", required=True),
            path=dict(type="path", default="/etc/ansible/facts.d/clusterforge_pending.fact"),
            flag_path=dict(type="path", default="/var/lib/clusterforge/reboot-required"),
        ),
        supports_check_mode=True,
    )
    path, source = module.params["path"], module.params["source"]
    reasons = sorted({r.strip() for r in module.params["reasons"] if r and r.strip()})

    exists = os.path.exists(path)
    old = load(path)
    old_text = render(old) if exists and old else ""
    all_reasons = {k: sorted(v) for k, v in old.get("reasons", {}).items() if isinstance(v, list) and v}
    mine_before = all_reasons.get(source, [])
    if reasons:
        all_reasons[source] = reasons
    else:
        all_reasons.pop(source, None)
    new = {"reboot_required": any(all_reasons.values()), "reasons": all_reasons}
    new_text = render(new)

    flag_path = module.params["flag_path"]
    flag_old = _read_text(flag_path) if flag_path else None
    flat = sorted(r for rs in all_reasons.values() for r in rs)
    flag_new = "".join("%s\n" % r for r in flat) if flat else None

    file_changed = mine_before != reasons or not exists or old_text != new_text
    flag_changed = bool(flag_path) and flag_old != flag_new
    changed = file_changed or flag_changed
    result = dict(changed=changed, pending=new, reboot_required=new["reboot_required"], path=path,
                  flag_path=flag_path, reasons=flat)
    if changed:
        before = old_text + ("%s:\n%s" % (flag_path, flag_old or "<absent>\n") if flag_path else "")
        after = new_text + ("%s:\n%s" % (flag_path, flag_new or "<absent>\n") if flag_path else "")
        result["diff"] = dict(before_header=path, after_header=path, before=before, after=after)
    if module.check_mode:
        module.exit_json(**result)
    if file_changed:
        _write_atomic(module, path, new_text)
    if flag_changed:
        if flag_new is None:
            try:
                os.unlink(flag_path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                module.fail_json(msg="cannot remove %s: %s" % (flag_path, exc))
        else:
            _write_atomic(module, flag_path, flag_new)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
