"""Render role templates and variables for one inventory host without running the role.

Usage: python render.py INVENTORY HOST ROLE FAMILY FACTS_JSON REQUESTS_JSON
       python render.py --batch JOBS_JSON   (a list of [INVENTORY, HOST, ROLE, FAMILY, FACTS, REQUESTS];
                                             prints the list of results: one Ansible start for many renders)
REQUESTS_JSON: {"vars": {"<name>": "<jinja or value>"},
                "templates": {"<key>": "<template path relative to the role>"},
                "expressions": {"<key>": "<jinja>"}}
Prints {"<key>": rendered, ...} as JSON.

Variable precedence follows a real run: role defaults < inventory group/host vars < role vars
(vars/main.yml) < include_vars of vars/<FAMILY>.yml. Facts are injected as host facts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.manager import VariableManager

ROOT = Path(__file__).resolve().parents[4]
PLAYBOOKS = ROOT / "playbooks"


def _trust(value: object) -> object:
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trust(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trust(v) for v in value]
    return value


def render_one(
    inventory: str, host_name: str, role: str, family: str, facts: dict, requests: dict
) -> dict[str, object]:
    loader = DataLoader()
    loader.set_basedir(str(PLAYBOOKS))
    inv = InventoryManager(loader=loader, sources=[inventory])
    vm = VariableManager(loader=loader, inventory=inv)
    facts = dict(facts)
    facts.setdefault("os_family", family)
    play = Play.load(
        {"hosts": "all", "gather_facts": False, "roles": [role]}, variable_manager=vm, loader=loader
    )
    host = inv.get_host(host_name)
    variables = vm.get_vars(play=play, host=host)
    family_vars = PLAYBOOKS / "roles" / role / "vars" / f"{family}.yml"
    if family_vars.exists():
        # include_vars trusts the file's templates; do the same.
        variables.update(_trust(loader.load_from_file(str(family_vars)) or {}))
    variables["ansible_managed"] = "Ansible managed"
    variables["ansible_facts"] = facts
    variables.update({f"ansible_{k}": v for k, v in facts.items()})
    variables["ansible_check_mode"] = False
    templar = Templar(loader=loader, variables=variables)
    for key, expr in requests.get("vars", {}).items():
        variables[key] = templar.template(trust_as_template(expr)) if isinstance(expr, str) else expr
    templar = Templar(loader=loader, variables=variables)
    out: dict[str, object] = {}
    for key, rel in requests.get("templates", {}).items():
        source = (PLAYBOOKS / "roles" / role / rel).read_text()
        out[key] = templar.template(trust_as_template(source))
    for key, expr in requests.get("expressions", {}).items():
        out[key] = templar.template(trust_as_template(expr))
    return out


def main() -> None:
    init_plugin_loader([str(PLAYBOOKS / "collections"), str(ROOT / "collections")])
    if sys.argv[1] == "--batch":
        jobs = json.loads(Path(sys.argv[2]).read_text())
        print(json.dumps([render_one(*job) for job in jobs], default=str))
        return
    inventory, host_name, role, family, facts_json, requests_json = sys.argv[1:7]
    out = render_one(inventory, host_name, role, family, json.loads(facts_json), json.loads(requests_json))
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
