"""`clusterforge drift` on the provisioned lab (issues: drift checks for CI; #20 drift at read cost).

A provisioned lab has no drift (exit 0), read fast: every node against its applied state, no check run;
each kind of hand change on a node yields a drift item naming the node, the setting, expected and actual
(exit 3) — from the fast read, and a changed node is then explained by site.yml --check --diff; drift
on one node never hides drift on another; a spec typo exits 2, never 3; `--fix` clears the drift and the
next drift run exits 0, fast again (the fix recorded the new applied state). `--via slurm` (the nodes
reading themselves in one Slurm job step) finds the same items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAB_SPEC, REPO

pytestmark = pytest.mark.lab


def cli(*args: str, timeout: int = 600, db: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI; `db`: the records database to use (the provisioned lab's: its nodes' applied state)."""
    env = dict(os.environ, CLUSTERFORGE_DB=str(db)) if db is not None else None
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def sh(p: Any, node: str, cmd: str) -> None:
    res = p.lab.exec(node, ["sh", "-c", cmd], timeout=180)
    assert res.returncode == 0, f"{node}: `{cmd}`: {res.stderr}"


def drift_json(p: Any, tmp: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp / "drift.json"
    res = cli("drift", str(p.spec), "--format", "json", "--output", str(out), *extra, db=p.records_db)
    assert res.returncode in (0, 3), f"drift failed (rc {res.returncode}): {res.stderr[-3000:]}"
    return res.returncode, json.loads(out.read_text())


def test_spec_typo_is_bad_input_not_drift(tmp_path: Path) -> None:
    bad = tmp_path / "lab.yaml"
    bad.write_text((LAB_SPEC).read_text().replace("pool_manager:", "pool_manager_x:"))
    res = cli("drift", str(bad), timeout=120)
    assert res.returncode == 2, res.stderr
    assert "pool_manager_x" in res.stderr and "Traceback" not in res.stderr


def test_drift_finds_every_change_names_it_and_fix_clears_it(provisioned_lab: Any, tmp_path: Path) -> None:
    p = provisioned_lab
    p.restore()
    rc, clean = drift_json(p, tmp_path)
    assert rc == 0 and clean["items"] == [], clean["items"]
    assert clean["deep"] == {}, f"nodes not read against their applied state: {clean['deep']}"

    roce = next(n for n in p.doc["nodes"] if n["fabric_type"] == "roce")
    ib = next(n for n in p.doc["nodes"] if n["fabric_type"] == "infiniband")
    r = [x["netdev"] for x in roce["rails"]]
    dcgm = "datacenter-gpu-manager-4"
    changes = {  # node -> (command, words one of its drift items must carry)
        roce["name"]: [
            (f"ip link set {r[0]} mtu 1500", ["1500"]),
            (f"mlnx_qos -i {r[1]} --pfc 0,0,0,0,0,0,0,0 >/dev/null", ["pfc"]),
            (
                "sed -i 's/^kernel.numa_balancing.*/kernel.numa_balancing = 1/' "
                "/etc/sysctl.d/90-clusterforge.conf",
                ["numa_balancing"],
            ),
        ],
        ib["name"]: [
            ("echo powersave > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", ["powersave"]),
            ("systemctl stop nvidia-persistenced", ["persistenced"]),
            (
                "sed -i 's/ *hugepages=[0-9]*//; s/ *hugepagesz=1G//; s/ *default_hugepagesz=1G//' "
                "/etc/default/grub.d/99-clusterforge.cfg",
                ["hugepages"],
            ),
            (
                f"apt-mark unhold {dcgm}-core {dcgm}-cuda12 >/dev/null && apt-get install -qq -y "
                f"--allow-downgrades --allow-change-held-packages {dcgm}-core=1:4.4.1*"
                f" {dcgm}-cuda12=1:4.4.1* "
                ">/dev/null",
                ["4.4.1"],
            ),
        ],
    }
    # found by the fast read alone (file mode, unit enablement): not in the deep run's assertions below
    fast_only = {
        roce["name"]: [
            ("chmod 0600 /etc/nccl.conf", ["/etc/nccl.conf mode", "0600"]),
            ("systemctl disable --quiet lldpd", ["lldpd.service enabled", "disabled"]),
        ],
    }
    # and these items come from the applied-state comparison itself (source "applied state")
    applied_items = {
        roce["name"]: ["file /etc/sysctl.d/90-clusterforge.conf"],
        ib["name"]: ["file /etc/default/grub.d/99-clusterforge.cfg", f"package {dcgm}-core hold"],
    }
    try:
        for node, cmds in [*changes.items(), *fast_only.items()]:
            for cmd, _ in cmds:
                sh(p, node, cmd)
        rc, rep = drift_json(p, tmp_path)
        assert rc == 3
        by_node = _by_node(rep, set(changes))
        for node, cmds in [*changes.items(), *fast_only.items()]:
            _named(by_node, node, cmds)
        for node, settings in applied_items.items():
            got = {it["setting"] for it in by_node[node] if it["source"] == "applied state"}
            assert set(settings) <= got, f"{node}: applied-state items {sorted(got)}, expected {settings}"
        # only the changed nodes were explained by the check run (the code path of `--deep`, which only
        # widens it to every node: tests/unit/drift/test_drift_run.py; a lab run of it costs ~4 minutes)
        assert set(rep["deep"]) == set(changes), rep["deep"]
        for node in changes:  # and the check run named the hand-edited files' tasks
            checked = [it for it in by_node[node] if it["source"].startswith("role ")]
            assert checked, f"{node}: the check run named nothing ({by_node[node]})"
        # the default read is the lab's Slurm job step (the nodes read themselves with the node checker the
        # monitoring role installed; #20 item 3): the same drift when every node is read over SSH from here
        rc, by_ssh = drift_json(p, tmp_path, "--via", "ssh")
        assert rc == 3 and by_ssh["errors"] == rep["errors"], by_ssh["errors"]
        assert _keys(by_ssh) == _keys(rep), sorted(_keys(by_ssh) ^ _keys(rep))
        assert set(by_ssh["deep"]) == set(changes), by_ssh["deep"]

        res = cli("drift", str(p.spec), "--fix", db=p.records_db)
        assert res.returncode in (0, 3), res.stderr[-3000:]
        rc, after = drift_json(p, tmp_path)
        assert rc == 0, f"drift left after --fix: {after['items']}"
        assert after["deep"] == {}, after["deep"]
    finally:
        p.restore()


def _keys(rep: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(it["node"], it["setting"], it["expected"], it["source"]) for it in rep["items"]}


def _by_node(rep: dict[str, Any], changed: set[str]) -> dict[str, list[dict[str, Any]]]:
    by_node: dict[str, list[dict[str, Any]]] = {}
    for it in rep["items"]:
        by_node.setdefault(it["node"], []).append(it)
    assert set(by_node) == changed, f"drift on {sorted(by_node)}, changed {sorted(changed)}"
    for items in by_node.values():
        for it in items:
            assert it["setting"] and it["expected"] and it["actual"] and it["source"], it
    return by_node


def _named(by_node: dict[str, list[dict[str, Any]]], node: str, cmds: list[tuple[str, list[str]]]) -> None:
    for cmd, words in cmds:
        hits = [it for it in by_node[node] if all(w.lower() in json.dumps(it).lower() for w in words)]
        assert hits, f"{node}: no drift item for `{cmd}` among {by_node[node]}"
