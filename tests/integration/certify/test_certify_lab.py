"""Certification on the provisioned lab: a clean lab certifies and is admitted in Slurm; every fault kind
makes exactly its checks fail (or error) and drains the node with that reason; clearing it re-admits;
unreachable, hung-tool, noisy and interrupted runs; a spec change that does not touch a node."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from clusterforge.checks.registry import base_id

pytestmark = pytest.mark.lab

# fault -> (params, checks that must not pass, checks allowed not to pass (regexes), verdict)
FAULTS: dict[str, tuple[dict[str, Any], set[str], str, str]] = {
    "gpu-missing": (
        {"gpu": 3},
        {"gpu.count", "gpu.nvlink", "gpu.topology"},
        r"gpu\.(count|nvlink|topology)|rdma\.numa\[rail[3-7]\]",
        "fail",
    ),
    "pfc-off": ({"rail": 2}, {"rdma.roce_qos[rail2]"}, r"rdma\.roce_qos\[rail2\]", "fail"),
    "xid-79": (
        {"gpu": 5},
        {"gpu.xid", "gpu.count"},
        r"gpu\.(xid|count|nvlink|topology)|rdma\.numa\[rail[5-7]\]",
        "fail",
    ),
    "rail-down": (
        {"rail": 1},
        {"rdma.port[rail1]", "rdma.netdev[rail1]"},
        # a down port answers no neighbour query either (LLDP on RoCE, smpquery on InfiniBand)
        r"rdma\.(port|netdev|active_mtu|roce_gid)\[rail1\]|cabling\.rail_neighbour\[rail1\]",
        "fail",
    ),
    "row-remap-pending": ({"gpu": 2}, {"gpu.remapped_rows"}, r"gpu\.remapped_rows", "fail"),
    "mtu-reverted": (
        {"rail": 4},
        {"rdma.netdev[rail4]", "rdma.active_mtu[rail4]"},
        r"rdma\.(netdev|active_mtu)\[rail4\]",
        "fail",
    ),
    "ecc-uncorrectable": (
        {"gpu": 1},
        {"gpu.ecc_errors", "gpu.xid"},
        r"gpu\.(ecc_errors|xid|remapped_rows)",
        "fail",
    ),
    "rail-half-rate": ({"rail": 6}, {"rdma.port[rail6]"}, r"rdma\.port\[rail6\]", "fail"),
    "slow-gpu": ({"gpu": 0}, {"gpu.pcie", "gpu.clock_events"}, r"gpu\.(pcie|clock_events)", "fail"),
    "service-stopped": (
        {"service": "persistenced"},
        {"gpu.persistence_mode"},
        r"gpu\.persistence_mode",
        "fail",
    ),
}
ROUNDS = [
    {"roce-01": "gpu-missing", "roce-02": "pfc-off", "ib-01": "xid-79", "ib-02": "rail-down"},
    {
        "roce-01": "row-remap-pending",
        "roce-02": "mtu-reverted",
        "ib-01": "ecc-uncorrectable",
        "ib-02": "rail-half-rate",
    },
    {"roce-01": "slow-gpu", "roce-02": "service-stopped"},
]
#: faults whose kernel-log lines stay until the node reboots ("Xid since boot"); the fix is a reboot
REBOOT_AFTER = {"xid-79", "ecc-uncorrectable", "row-remap-pending"}


def not_passing(doc: dict[str, Any], node: str) -> dict[str, str]:
    n = next(x for x in doc["nodes"] if x["node"] == node)
    return {c["check_id"]: c["status"] for c in n["checks"] if c["status"] in ("fail", "error")}


def node_doc(doc: dict[str, Any], node: str) -> dict[str, Any]:
    return next(x for x in doc["nodes"] if x["node"] == node)


def apply_faults(cl: Any, faults: dict[str, str], clear: bool = False) -> None:
    from clusterforge.lab.sim.faults import apply

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda item: apply(cl.lab, item[0], item[1], clear=clear, **FAULTS.get(item[1], ({},))[0]),
                faults.items(),
            )
        )


def settled_states(cl: Any, nodes: list[str], timeout: float = 60.0) -> dict[str, Any]:
    """Pool states once every node is schedulable or `timeout` passed: a resumed node that rebooted or lost
    SSH earlier shows as not responding (`down`) until slurmctld's next contact with its slurmd."""
    deadline = time.monotonic() + timeout
    while True:
        states = cl.pool().status(nodes)
        if all(s.schedulable for s in states.values()) or time.monotonic() > deadline:
            return states
        time.sleep(2)


def reboot(cl: Any, nodes: list[str]) -> None:
    for n in nodes:
        cl.lab.exec(n, ["systemctl", "reboot"], timeout=30)
    time.sleep(3)
    cl.lab.wait_ssh(nodes, timeout=120)
    cl.wait_lldp_heard(nodes)  # a just-booted node has not heard its switches yet: not a cabling verdict


def test_fresh_lab_certifies_and_every_node_is_admitted(certify_lab: Any) -> None:
    rc, doc = certify_lab.certify()  # its wall time is a figure of bench/ (make bench), not asserted here
    bad = {n["node"]: not_passing(doc, n["node"]) for n in doc["nodes"] if n["verdict"] != "pass"}
    assert rc == 0 and not bad, f"not passing on a freshly provisioned lab: {bad}"
    states = settled_states(certify_lab, certify_lab.nodes)
    assert all(s.schedulable for s in states.values()), {n: (s.state, s.reason) for n, s in states.items()}
    assert all(doc["certificates"].get(n) for n in certify_lab.nodes)


def _verdicts(doc: dict[str, Any]) -> dict[str, set[tuple[str, str]]]:
    return {n["node"]: {(c["check_id"], c["status"]) for c in n["checks"]} for n in doc["nodes"]}


def test_quick_tier_as_one_slurm_job_step_judges_as_the_ssh_run(certify_lab: Any) -> None:
    """Each node checks itself with the node checker the monitoring role installed (no pytest on the node
    but the program's), all in one `srun` step: the same checks with the same verdicts as the SSH run, and
    a fault set on one node is found the same way."""
    rc_ssh, ssh = certify_lab.certify(admit=False)
    rc, step = certify_lab.certify(admit=False, via="slurm")
    log = certify_lab.last_log()
    assert f"{len(certify_lab.nodes)} node(s) through a Slurm job step, 0 over SSH" in log, log[-2000:]
    assert rc == rc_ssh == 0, {n["node"]: not_passing(step, n["node"]) for n in step["nodes"]}
    assert _verdicts(step) == _verdicts(ssh)
    apply_faults(certify_lab, {"roce-02": "pfc-off"})
    try:
        rc, step = certify_lab.certify(limit="roce-02", admit=False, via="slurm")
        assert rc == 3 and set(not_passing(step, "roce-02")) == {"rdma.roce_qos[rail2]"}, step
    finally:
        apply_faults(certify_lab, {"roce-02": "pfc-off"}, clear=True)


def test_spec_change_elsewhere_leaves_a_certificate_valid(certify_lab: Any, tmp_path: Any) -> None:
    from clusterforge.plan import build_plan
    from clusterforge.pool import admission
    from clusterforge.records import Store
    from clusterforge.spec import load_spec

    spec = tmp_path / "lab.yaml"
    text = certify_lab.spec.read_text().replace(
        "  check_timeout_s: 30",
        "  check_timeout_s: 30\n  thresholds:\n    h100-sxm-8x400g-ib: {ib_write_bw_gbps: 370}",
    )
    spec.write_text(text)
    new = build_plan(load_spec(spec)).doc
    old_digest = {n["name"]: n["expectation_digest"] for n in certify_lab.doc["nodes"]}
    new_digest = {n["name"]: n["expectation_digest"] for n in new["nodes"]}
    assert new["plan_hash"] != certify_lab.doc["plan_hash"]
    assert [n for n in old_digest if old_digest[n] != new_digest[n]] == ["ib-01", "ib-02"]
    store = Store()
    for node, admitted in (("roce-01", True), ("ib-01", False)):
        d = admission.decide(
            node, new, store.certificates(node, "quick"), admission.history_from_store(store, node)
        )
        assert (d.action == "admit") is admitted, (node, d.reason)
        if not admitted:
            assert "old expectation digest" in d.reason


@pytest.mark.parametrize("round_no", range(len(ROUNDS)))
def test_faults_fail_exactly_their_checks_and_drain(certify_lab: Any, round_no: int) -> None:
    faults = ROUNDS[round_no]
    apply_faults(certify_lab, faults)
    try:
        # only the faulted nodes: a clean pass in between would make the next failure look like flapping
        # (fail, pass, fail), which the admission policy holds for review
        rc, doc = certify_lab.certify(limit=",".join(faults))
    finally:
        apply_faults(certify_lab, faults, clear=True)
        reboot(certify_lab, [n for n, k in faults.items() if k in REBOOT_AFTER])
    assert rc == 3
    states = certify_lab.pool().status(list(faults))
    for node, kind in faults.items():
        found = not_passing(doc, node)
        _, must, allowed, verdict = FAULTS[kind]
        assert node_doc(doc, node)["verdict"] == verdict, (node, kind, found)
        assert must <= set(found), f"{kind} on {node}: expected {must} not to pass; not passing: {found}"
        extra = {c for c in found if not re.fullmatch(allowed, c)}
        assert not extra, f"{kind} on {node}: unrelated checks did not pass: {extra}"
        for c in node_doc(doc, node)["checks"]:
            if c["status"] == "fail":
                assert "expected" in c["message"] and "found" in c["message"] and "Fix:" in c["message"], c
        assert states[node].state == "drained", (node, states[node])
        # the registry's reason: `clusterforge: <check> [<component>]: <action> ...` for the worst check
        reason = states[node].reason
        assert reason.startswith("clusterforge: "), reason
        assert any(base_id(c) in reason for c in found), (reason, found)
        assert re.search(r": (drain|reset_gpu|reboot|service)\b", reason), reason


def test_unreachable_and_hung_tool(certify_lab: Any) -> None:
    from clusterforge.lab.sim.faults import apply

    apply(certify_lab.lab, "ib-02", "sshd-stopped")
    apply(certify_lab.lab, "ib-01", "hung-tool", tool="nvidia-smi")
    start = time.monotonic()
    try:
        rc, doc = certify_lab.certify(limit="ib-01,ib-02")
    finally:
        apply(certify_lab.lab, "ib-02", "sshd-stopped", clear=True)
        apply(certify_lab.lab, "ib-01", "hung-tool", clear=True)
    elapsed = time.monotonic() - start
    timeout = int(certify_lab.doc["certification"]["check_timeout_s"])
    assert rc == 3 and elapsed < timeout + 45, f"took {elapsed:.0f} s with a hung nvidia-smi"
    gone = node_doc(doc, "ib-02")
    assert (gone["status"], gone["verdict"]) == ("unreachable", "error")
    hung = not_passing(doc, "ib-01")
    assert node_doc(doc, "ib-01")["verdict"] == "error"
    assert hung and set(hung.values()) == {"error"}, hung
    assert {"gpu.count", "gpu.xid", "software.driver", "inventory.parts"} - {"gpu.xid"} <= set(hung)
    assert "gpu.xid" not in hung  # dmesg still answers
    states = certify_lab.pool().status(["ib-01", "ib-02"])
    assert states["ib-02"].reason == "clusterforge: unreachable (ssh.reachable)"
    assert states["ib-01"].state == "drained" and not states["ib-01"].schedulable


def test_full_tier_noisy_passes_slow_nic_fails(certify_lab: Any) -> None:
    from clusterforge.lab.sim.faults import apply

    # the full tier's tools (nvbandwidth, all_reduce_perf) were installed by provisioning (role benchmarks)
    apply(certify_lab.lab, "roce-01", "slow-nic", rail=3)
    apply(certify_lab.lab, "roce-02", "noisy")
    try:
        rc, doc = certify_lab.certify(tier="full", limit="roce-01,roce-02")
    finally:
        apply(certify_lab.lab, "roce-01", "slow-nic", clear=True)
        apply(certify_lab.lab, "roce-02", "noisy", clear=True)
    assert rc == 3
    assert node_doc(doc, "roce-02")["verdict"] == "pass", not_passing(doc, "roce-02")
    assert not_passing(doc, "roce-01") == {"performance.ib_write_bw[rail3]": "fail"}
    slow = next(
        c for c in node_doc(doc, "roce-01")["checks"] if c["check_id"] == "performance.ib_write_bw[rail3]"
    )
    attempts = slow["evidence"]["attempts"]
    assert len(attempts) == int(certify_lab.doc["certification"]["perf_attempts"])
    assert all(not a["passed"] for a in attempts)
    # roce-02 was faulted and rebooted by earlier tests: Slurm marks it responding again on its next contact
    states = settled_states(certify_lab, ["roce-02"])
    assert states["roce-02"].schedulable, (states["roce-02"].state, states["roce-02"].reason)
    assert certify_lab.pool().status(["roce-01"])["roce-01"].state == "drained"


def test_interrupted_run_leaves_no_false_pass(certify_lab: Any) -> None:
    from clusterforge.records import Store

    store = Store()
    before = {r.id for r in store.runs(kind="certify")}
    proc = subprocess.Popen(
        # over SSH: the validator processes here are what must not outlive the killed runner
        [
            str(Path(sys.executable).parent / "clusterforge"),
            "certify",
            str(certify_lab.spec),
            "--admit",
            "--via",
            "ssh",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    run = None
    while time.monotonic() < deadline and run is None:
        time.sleep(0.2)
        run = next((r for r in store.runs(kind="certify") if r.id not in before), None)
    assert run is not None, "the runner did not start a run"
    workdir = store.path.parent / "certify" / run.id
    while time.monotonic() < deadline and not any(p.stat().st_size > 2000 for p in workdir.glob("*.jsonl")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(2)
    assert run.id in store.mark_stale_incomplete() or store.get_run(run.id).status == "incomplete"
    assert store.get_run(run.id).status == "incomplete"
    assert not store.node_results(run.id)
    assert all(
        c["issuer"]["run_id"] != run.id for n in certify_lab.nodes for c in store.certificates(n, "quick")
    )
    left = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True).stdout.split()
    assert not left, f"validator processes outlived the killed runner: {left}"


def test_recertify_after_faults_readmits_every_node(certify_lab: Any) -> None:
    rc, doc = certify_lab.certify()
    bad = {n["node"]: not_passing(doc, n["node"]) for n in doc["nodes"] if n["verdict"] != "pass"}
    assert rc == 0 and not bad, bad
    states = settled_states(certify_lab, certify_lab.nodes)
    assert all(s.schedulable for s in states.values()), {n: (s.state, s.reason) for n, s in states.items()}
