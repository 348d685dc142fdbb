"""The exporters and the passive health check the monitoring role installs (quick tier).

`monitoring.exporter[node]`: prometheus-node-exporter answers on the plan's port with its textfile collector
on (`node_textfile_scrape_error 0`); `monitoring.exporter[dcgm]`: dcgm-exporter answers with every DCGM field
of the plan's counters file. An exporter that does not answer is `fail` (installed and enabled by the role:
measured and wrong). `monitoring.health_check`: the check runs (scratch state, no metrics, never drains) and
names the node. Fetched with the node's python3 (minimal servers have no curl).
"""

from __future__ import annotations

import re

import pytest

from clusterforge.certify.checks import CheckError, Probe, expect, prefetches
from clusterforge.certify.fixes import hint
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import argv

pytestmark = pytest.mark.quick

#: prints the body, or one line `DOWN <why>` when nothing answers (exit 0 either way: the check judges)
FETCH = (
    "import sys, urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode('utf-8', 'replace'))\n"
    "except Exception as e:\n"
    "    print('DOWN', e)\n"
)
SCRATCH = "/tmp/clusterforge-health-certify"
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)", re.M)


def fetch(port: int) -> str:
    return argv("python3", "-c", FETCH, f"http://127.0.0.1:{int(port)}/metrics")


def samples(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in _SAMPLE.finditer(text):
        out.setdefault(m.group("name"), []).append(m.group("value"))
    return out


def _mon(node: NodeExpect) -> dict:
    mon = node.desired.get("monitoring")
    if not isinstance(mon, dict):
        raise CheckError("the plan has no monitoring desired state: re-run `clusterforge plan`")
    return mon


@prefetches
def commands(node: NodeExpect) -> list[str]:
    mon = node.desired_state.get("monitoring") or {}
    return [fetch(mon[k]["port"]) for k in ("node_exporter", "dcgm_exporter") if k in mon]


@pytest.mark.parametrize("exporter", ["node", "dcgm"])
def test_exporter(node: NodeExpect, probe: Probe, exporter: str) -> None:
    mon, fix = _mon(node), hint("monitoring", node.name)
    key = "node_exporter" if exporter == "node" else "dcgm_exporter"
    port = int(mon[key]["port"])
    text = probe.run(fetch(port))
    expect(
        not text.startswith("DOWN"), f"{exporter} exporter on :{port}", "/metrics answers", text[:200], fix
    )
    found = samples(text)
    if exporter == "node":
        expect(
            found.get("node_textfile_scrape_error") == ["0"],
            "node-exporter textfile collector",
            f"on, reading {mon[key]['textfile_dir']} (node_textfile_scrape_error 0)",
            found.get("node_textfile_scrape_error") or "off",
            fix,
        )
        return
    fields = [c["field"] for c in mon[key]["counters"]]
    missing = [f for f in fields if f not in found]
    expect(not missing, "dcgm-exporter series", f"{len(fields)} fields of the plan's counters", missing, fix)


def test_health_check(node: NodeExpect, probe: Probe) -> None:
    health, fix = _mon(node)["health"], hint("monitoring", node.name)
    cmd = argv(  # run as Slurm's HealthCheckProgram runs it: the program itself, by the health check's name
        health["path"], "--config", health["config"], "--pool", "none", "--node", node.name,
        "--state-dir", SCRATCH,
    )  # fmt: skip
    out = probe.run(cmd, ok=(0, 1), timeout=30)
    expect(
        out.startswith(f"{node.name}: "), "health check", f"runs and reports on {node.name}", out[:200], fix
    )
