"""Provisioning the 4-node lab for real (issue: Ansible roles, run by `make provision`).

One full provision (the session fixture `provisioned_lab`, rolling reboots included), then: a second run
changes nothing; settings changed by hand are named exactly by `--check --diff` (which changes nothing)
and restored by the next run, which reports exactly those tasks as changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from clusterforge import targets
from clusterforge.run.ansible import run_playbook
from clusterforge.run.provision import Options, provision
from tests.conftest import REPO

pytestmark = pytest.mark.lab


def sh(plab: Any, node: str, cmd: str) -> str:
    res = plab.lab.exec(node, ["sh", "-c", cmd], timeout=60)
    assert res.returncode == 0, f"{node}: `{cmd}` failed: {res.stderr}"
    return str(res.stdout)


def node(plab: Any, name: str) -> dict[str, Any]:
    return next(n for n in plab.doc["nodes"] if n["name"] == name)


def test_first_provision_converges_with_a_rolling_reboot(provisioned_lab: Any) -> None:
    rep = provisioned_lab.report
    assert rep.ok, {h.host: h.message for h in rep.failed}
    tuning = provisioned_lab.doc["tuning"]
    for name in provisioned_lab.nodes:
        h = rep.hosts[name]
        # a fresh node boots without the tuned kernel command line: every node needed the reboot
        assert h.rebooted, f"{name} was not rebooted: pending={h.pending_reboot}"
        assert not h.drained, f"{name} was left drained: {h.message}"
        cmdline = sh(provisioned_lab, name, "cat /proc/cmdline")
        assert f"hugepages={tuning['hugepages']['count']}" in cmdline
        assert "iommu=pt" in cmdline and "processor.max_cstate=1" in cmdline
        assert (
            sh(provisioned_lab, name, "test -e /var/lib/clusterforge/reboot-required || echo none").strip()
            == "none"
        )


def test_nodes_are_back_in_slurm_after_the_reboot(provisioned_lab: Any) -> None:
    from clusterforge import targets

    states = targets.pool_manager(provisioned_lab.doc).status(provisioned_lab.nodes)
    for name, st in states.items():
        assert st.state in ("idle", "busy"), f"{name} is {st.state} ({st.reason})"


def test_every_setting_is_observable_on_the_nodes(provisioned_lab: Any) -> None:
    p = provisioned_lab
    for name in p.nodes:
        n = node(p, name)
        nccl = sh(p, name, "cat /etc/nccl.conf")
        hcas = ",".join(f"{r['hca']}:1" for r in n["rails"])
        assert f"NCCL_IB_HCA=={hcas}" in nccl
        assert sh(p, name, "systemctl is-active nvidia-persistenced").strip() == "active"
        assert sh(p, name, "cat /sys/kernel/mm/transparent_hugepage/enabled").find("[madvise]") >= 0
        assert sh(p, name, "cat /proc/sys/kernel/numa_balancing").strip() == "0"
        assert (
            sh(p, name, "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").strip() == "performance"
        )
        assert "nvidia_peermem" in sh(p, name, "lsmod")
        assert f"nvidia-driver-{p.doc['software']['nvidia_driver']['branch']}" in sh(
            p, name, "dpkg-query -W -f '${Package} ${Status}\\n' 'nvidia-driver-*'"
        )
        if n["fabric_type"] == "roce":
            r0 = n["rails"][0]["netdev"]
            if n["desired"]["rdma"]["qos_tool"] == "dcb":  # inbox stack: iproute2's dcb, no mlnx_qos
                assert "3:on" in sh(p, name, f"dcb pfc show dev {r0} prio-pfc")
                assert sh(p, name, f"dcb -N app show dev {r0}").split()[1:] == ["26:3", "48:6"]
            else:
                qos = sh(p, name, f"mlnx_qos -i {r0}")
                assert "Priority trust state: dscp" in qos
                assert re.search(r"enabled\s+0\s+0\s+0\s+1\s+0\s+0\s+0\s+0", qos), qos
            assert sh(p, name, f"cat /sys/class/net/{r0}/mtu").strip() == "9000"
            assert sh(p, name, f"cat /sys/class/net/{r0}/ecn/roce_np/enable/3").strip() == "1"
            assert "NCCL_IB_TC=106" in nccl and "NCCL_IB_GID_INDEX=3" in nccl
        else:
            assert "NCCL_IB_TC" not in nccl


def test_second_run_changes_nothing(provisioned_lab: Any) -> None:
    doc = provisioned_lab.doc
    env = targets.for_plan(doc).environment(doc)  # the lab BMCs' account, as the provision flow passes it
    rep = provision(doc, provisioned_lab.inventory, Options(), None, None, env)
    assert rep.ok, {h.host: h.message for h in rep.failed}
    changed = {h.host: h.changed_tasks for h in rep.hosts.values() if h.changed}
    assert changed == {}, f"a second run changed: {changed}"
    assert not any(h.rebooted for h in rep.hosts.values())


# (node, change by hand, check that the value is drifted, expected changed tasks (name substrings))
def _changes(p: Any) -> list[tuple[str, str, str, list[str]]]:
    roce = next(n for n in p.doc["nodes"] if n["fabric_type"] == "roce")
    ib = next(n for n in p.doc["nodes"] if n["fabric_type"] == "infiniband")
    r = [x["netdev"] for x in roce["rails"]]
    pfc_off = (
        (
            roce["name"],
            f"dcb pfc set dev {r[0]} prio-pfc all:off",
            f"dcb pfc show dev {r[0]} prio-pfc | grep -q '3:off'",
            ["RoCE QoS with dcb"],
        )
        if roce["desired"]["rdma"]["qos_tool"] == "dcb"
        else (
            roce["name"],
            f"mlnx_qos -i {r[0]} --pfc 0,0,0,0,0,0,0,0 >/dev/null",
            f"mlnx_qos -i {r[0]} | grep -E 'enabled +0 +0 +0 +0 '",
            ["PFC enabled only on the lossless priority"],
        )
    )
    return [
        pfc_off,
        (
            roce["name"],
            f"ip link set {r[1]} mtu 1500",
            f"test $(cat /sys/class/net/{r[1]}/mtu) = 1500",
            ["at the plan's MTU"],
        ),
        (
            roce["name"],
            f"echo 0 > /sys/class/net/{r[2]}/ecn/roce_np/enable/3",
            f"test $(cat /sys/class/net/{r[2]}/ecn/roce_np/enable/3) = 0",
            ["ECN (DCQCN)"],
        ),
        (
            ib["name"],
            "echo powersave > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "grep -q powersave /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            ["CPU frequency governor"],
        ),
        (
            ib["name"],
            "echo 1 > /proc/sys/kernel/numa_balancing",
            "test $(cat /proc/sys/kernel/numa_balancing) = 1",
            ["Sysctl values now"],
        ),
        (
            ib["name"],
            "echo always > /sys/kernel/mm/transparent_hugepage/enabled; sleep 0.2",
            "grep -q '\\[always\\]' /sys/kernel/mm/transparent_hugepage/enabled",
            ["Transparent hugepages policy"],
        ),
        (
            ib["name"],
            "systemctl stop nvidia-persistenced",
            "! systemctl -q is-active nvidia-persistenced",
            ["Start nvidia-persistenced"],
        ),
        (
            ib["name"],
            "sed -i 's/^NCCL_NET_GDR_LEVEL=.*/NCCL_NET_GDR_LEVEL=SYS/' /etc/nccl.conf",
            "grep -q NCCL_NET_GDR_LEVEL=SYS /etc/nccl.conf",
            ["NCCL configuration"],
        ),
    ]


def _changed(res: Any, host: str) -> list[str]:
    return [t.task for t in res.tasks if t.host == host and t.status == "changed"]


def _match(changed: list[str], expected: list[str]) -> dict[str, list[str]]:
    return {e: [c for c in changed if e in c] for e in expected}


def test_hand_changes_are_named_by_check_diff_and_restored(provisioned_lab: Any) -> None:
    p = provisioned_lab
    changes = _changes(p)
    try:
        for host, cmd, drifted, _ in changes:
            sh(p, host, cmd)
            sh(p, host, drifted)
        hosts = sorted({c[0] for c in changes})
        env = targets.for_plan(p.doc).environment(p.doc)  # the lab BMCs' account, as provision/drift pass it
        check = run_playbook("site.yml", p.inventory, limit=",".join(hosts), check=True, diff=True, env=env)
        assert not check.failed_hosts, {h.host: f"{h.failed_task}: {h.message}" for h in check.failed_hosts}
        for host in hosts:
            expected = [e for h, _, _, es in changes if h == host for e in es]
            got = _changed(check, host)
            matched = _match(got, expected)
            assert all(len(v) == 1 for v in matched.values()), (
                f"{host}: check named {got}, expected {expected}"
            )
            assert len(got) == len(expected), f"{host}: check named more than the drift: {got} vs {expected}"
            diffs = [t for t in check.tasks if t.host == host and t.status == "changed"]
            assert all(t.diff for t in diffs), f"{host}: a changed task has no before/after: {diffs}"
        for host, _, drifted, _ in changes:  # --check changed nothing
            sh(p, host, drifted)
        real = run_playbook("site.yml", p.inventory, limit=",".join(hosts), env=env)
        assert not real.failed_hosts, {h.host: f"{h.failed_task}: {h.message}" for h in real.failed_hosts}
        for host in hosts:
            expected = [e for h, _, _, es in changes if h == host for e in es]
            assert sorted(_changed(real, host)) == sorted(_changed(check, host)), (
                f"{host}: the run changed {_changed(real, host)}, check predicted {_changed(check, host)}"
            )
        for host, _, drifted, _ in changes:  # restored
            res = p.lab.exec(host, ["sh", "-c", drifted], timeout=60)
            assert res.returncode != 0, f"{host}: still drifted after the run: {drifted}"
    finally:
        p.restore(*sorted({c[0] for c in changes}))


def _provision_cli(p: Any, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`clusterforge provision` on the lab's spec (the records database the lab's provision wrote), and
    the run it recorded: node -> its outcome row."""
    from clusterforge.records import Store

    res = subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", "provision", str(p.spec), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ, CLUSTERFORGE_DB=str(p.records_db), COLUMNS="200"),
    )
    with Store(p.records_db) as store:
        run = store.runs(kind="provision", limit=1)[0]
        return res, {n.node: n for n in store.node_outcomes(run.id)}


def test_a_no_op_provision_reads_and_runs_site_yml_only_where_something_changed(provisioned_lab: Any) -> None:
    """#20: nodes a read finds as their last provision left them (and passing every quick check) are left
    alone — not run, not drained; a node with a declared setting changed by hand runs site.yml, which puts
    it back; then every node reads converged again."""
    p = provisioned_lab
    p.restore()
    name = next(n["name"] for n in p.doc["nodes"] if n["fabric_type"] == "roce")
    want = node(p, name)["desired"]["sysctls"]["vm.swappiness"]
    sh(p, name, "sysctl -q -w vm.swappiness=61")
    try:
        res, nodes = _provision_cli(p)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        others = sorted(set(p.nodes) - {name})
        assert {n: nodes[n].outcome for n in others} == dict.fromkeys(others, "skipped"), nodes
        assert all((nodes[n].message or "").startswith("converged: ") for n in others)
        assert nodes[name].outcome == "changed" and nodes[name].changed >= 1, nodes[name]
        assert sh(p, name, "sysctl -n vm.swappiness").strip() == want
        assert "vm.swappiness" in res.stdout and f"site.yml on {name}" in res.stdout, res.stdout[-3000:]

        again, nodes = _provision_cli(p)  # the changed node's new applied state is on record: all converged
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert {n: o.outcome for n, o in nodes.items()} == dict.fromkeys(p.nodes, "skipped"), nodes
    finally:
        p.restore(name)
