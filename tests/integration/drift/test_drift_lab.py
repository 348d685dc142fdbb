"""`clusterforge drift` on the provisioned lab (issue: drift checks for CI).

A provisioned lab has no drift (exit 0); each kind of hand change on a node yields a drift item naming the
node, the setting, expected and actual (exit 3); drift on one node never hides drift on another; a spec typo
exits 2, never 3; `--fix` clears the drift and the next drift run exits 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAB_SPEC, REPO

pytestmark = pytest.mark.lab


def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sh(p: Any, node: str, cmd: str) -> None:
    res = p.lab.exec(node, ["sh", "-c", cmd], timeout=180)
    assert res.returncode == 0, f"{node}: `{cmd}`: {res.stderr}"


def drift_json(p: Any, tmp: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp / "drift.json"
    res = cli("drift", str(p.spec), "--format", "json", "--output", str(out), *extra)
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
    try:
        for node, cmds in changes.items():
            for cmd, _ in cmds:
                sh(p, node, cmd)
        rc, rep = drift_json(p, tmp_path)
        assert rc == 3
        by_node: dict[str, list[dict[str, Any]]] = {}
        for it in rep["items"]:
            by_node.setdefault(it["node"], []).append(it)
        assert set(by_node) == set(changes), f"drift on {sorted(by_node)}, changed {sorted(changes)}"
        for node, cmds in changes.items():
            for cmd, words in cmds:
                hits = [it for it in by_node[node] if all(w.lower() in json.dumps(it).lower() for w in words)]
                assert hits, f"{node}: no drift item for `{cmd}` among {by_node[node]}"
            for it in by_node[node]:
                assert it["setting"] and it["expected"] and it["actual"] and it["source"], it

        res = cli("drift", str(p.spec), "--fix")
        assert res.returncode in (0, 3), res.stderr[-3000:]
        rc, after = drift_json(p, tmp_path)
        assert rc == 0, f"drift left after --fix: {after['items']}"
    finally:
        p.restore()
