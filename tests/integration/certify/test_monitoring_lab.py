"""Monitoring on the provisioned lab, through the lab's real Prometheus (the distribution's binary on the lab
host, its configuration generated from the plan, the project's alert rules loaded): every node's
node-exporter and dcgm-exporter are scraped and up, the exporters show the plan's GPUs and clusterforge's
own health series; an Xid 79 injected on one node makes the node's health check (run as Slurm's
HealthCheckProgram runs it) drain the node with a reason naming the Xid and the action, and the
`GpuFellOffTheBus` alert fires for that node (from the health check's series: the fallen GPU no longer
answers NVML, so dcgm-exporter has no sample of it)."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

pytestmark = pytest.mark.lab

NODE, GPU = "ib-02", 6


def query(expr: str) -> list[dict[str, Any]]:
    from clusterforge.lab import prometheus

    url = f"{prometheus.url()}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        doc = json.load(r)
    assert doc["status"] == "success", doc
    return list(doc["data"]["result"])


def by_instance(expr: str) -> dict[str, float]:
    return {str(s["metric"].get("instance", "")).split(":")[0]: float(s["value"][1]) for s in query(expr)}


def wait_for(what: str, probe: Any, timeout: float = 90.0) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last})")


def health_check(cl: Any, node: str) -> Any:
    """The node's health check as slurmd starts it (HealthCheckProgram: the installed path, no arguments)."""
    path = next(n for n in cl.doc["nodes"] if n["name"] == node)["desired"]["monitoring"]["health"]["path"]
    return cl.lab.exec(node, [path], timeout=60)


def test_prometheus_scrapes_every_node(certify_lab: Any) -> None:
    nodes = set(certify_lab.nodes)
    for job in ("node", "dcgm"):
        up = wait_for(
            f"{job} exporters up on every node",
            lambda job=job: (
                (found := by_instance(f'up{{job="{job}"}}'))
                and set(found) == nodes
                and all(v == 1 for v in found.values())
                and found
            ),
        )
        assert set(up) == nodes
    gpus = by_instance("count by (instance) (DCGM_FI_DEV_GPU_TEMP)")
    want = {n["name"]: n["desired"]["monitoring"]["health"]["gpu_count"] for n in certify_lab.doc["nodes"]}
    assert gpus == {k: float(v) for k, v in want.items()}
    for n in certify_lab.nodes:
        r = health_check(certify_lab, n)
        assert r.returncode == 0, (n, r.returncode, r.stdout, r.stderr)
    series = wait_for(
        "clusterforge's health series from every node",
        lambda: (
            (f := by_instance('count by (instance) ({__name__=~"clusterforge_health_.+"})'))
            and set(f) == nodes
            and f
        ),
    )
    assert set(series) == nodes


def test_xid_79_drains_with_its_action_and_fires_the_alert(certify_lab: Any) -> None:
    from clusterforge.lab.sim.faults import apply

    pool = certify_lab.pool()
    apply(certify_lab.lab, NODE, "xid-79", gpu=GPU)
    try:
        r = health_check(certify_lab, NODE)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)  # 1: a drain action was decided
        state = pool.status([NODE])[NODE]
        assert state.state in ("drained", "draining"), (state.state, state.reason)
        assert "79" in state.reason and "drain" in state.reason, state.reason
        firing = wait_for(
            "GpuFellOffTheBus firing for the node",
            lambda: [
                s["metric"]
                for s in query('ALERTS{alertname="GpuFellOffTheBus",alertstate="firing"}')
                if s["metric"].get("instance", "").startswith(f"{NODE}:")
            ],
        )
        # the fallen GPU no longer answers NVML (no dcgm sample): the kernel log (health check) fires it
        assert all(m.get("check") == "passive.xid.79" for m in firing), firing
        others = [
            s["metric"]["instance"]
            for s in query('ALERTS{alertname="GpuFellOffTheBus"}')
            if not s["metric"]["instance"].startswith(f"{NODE}:")
        ]
        assert not others, f"the alert fired for nodes without the fault: {others}"
    finally:
        apply(certify_lab.lab, NODE, "xid-79", clear=True, gpu=GPU)
        certify_lab.lab.exec(NODE, ["systemctl", "reboot"], timeout=30)  # an Xid stays until the reboot
        time.sleep(3)
        certify_lab.lab.wait_ssh([NODE], timeout=120)
        pool.resume(NODE)
