"""Up/down/reset/reboot/snapshot/crash cycles on ONE extra node (its own cluster, fabric and address),
so the shared session lab is not disturbed; each cycle must leave nothing of that node on the host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterforge.lab import Lab, cleanup, net, node, procs
from clusterforge.lab.synthetic import make_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def extra(lab: Any) -> Iterator[Lab]:
    used = {n.mgmt_ip for n in lab.plan.nodes}
    ips = [f"10.244.0.{i}" for i in range(250, 200, -1) if f"10.244.0.{i}" not in used]
    # other ordinals than the session lab's: with one MAC on two nodes, cfbr0 sends one's frames to the other
    raw = make_plan({"roce": 2}, cluster=f"{lab.cluster}-cycle", first_ordinal=0x100)
    for i, n in enumerate(raw["nodes"]):
        n.update(name=f"cycle-{i + 1:02d}", mgmt_ip=ips[i], fabric="cyc0", pool="cycle")
        n["rails"] = n["rails"][:2]
    extra = Lab(raw)
    yield extra
    extra.nodes_down(extra.plan.nodes)
    for br in {r.bridge for r in extra.plan.nodes[0].rails}:
        net.ip("link", "del", br, check=False)


def _traces(lab: Lab) -> dict[str, Any]:
    """What of the extra node exists on the host."""
    n = lab.plan.nodes[0]
    p = lab.paths(n.name)
    links = set(net.links())
    return {
        "netns": net.netns_exists(n.netns),
        "links": sorted({n.mgmt_host_link, *(r.host_link for r in n.rails)} & links),
        "processes": node.stray_processes(p.dir),
        "supervisor": node.supervisor_pid(p),
        "mounts": [m for m in cleanup._lab_mounts() if str(p.dir) in m],
    }


NOTHING = {"netns": False, "links": [], "processes": [], "supervisor": None, "mounts": []}


def _booted(lab: Lab, name: str, timeout: float = 120.0) -> str:
    """systemd's state once the node's boot finished (`is-system-running --wait`, run without sshd): an
    SSH banner comes before logind and the rest of the boot, so a login right after it may wait on them."""
    cmd = ["timeout", str(int(timeout)), "systemctl", "is-system-running", "--wait"]
    return str(lab.exec(name, cmd, timeout=timeout + 10).stdout).strip()


def _inside(lab: Lab, name: str) -> str:
    """What the node's systemd is doing (for a failure message)."""
    out = []
    for argv in (["systemctl", "list-jobs", "--no-pager"], ["journalctl", "-b", "-n", "40", "--no-pager"]):
        r = lab.exec(name, argv, timeout=30)
        out.append(f"$ {' '.join(argv)}\n{r.stdout}{r.stderr}")
    return "\n".join(out)


def _ssh_ok(lab: Lab, name: str | None = None) -> str:
    n = lab.plan.node(name) if name else lab.plan.nodes[0]
    state = _booted(lab, n.name)
    assert state in ("running", "degraded"), f"{n.name} boot: {state}\n{_inside(lab, n.name)}"
    try:
        r = subprocess.run(lab.ssh_argv(n.name, "hostname"), capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"ssh {n.name} hostname: no answer in 60 s\n{_inside(lab, n.name)}") from None
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_up_down_cycles_leave_nothing(extra: Lab) -> None:
    name = extra.plan.nodes[0].name
    for _ in range(2):
        extra.node_up(name, wait=True, timeout=60)
        assert _ssh_ok(extra) == name
        assert extra.status()["nodes"][name]["state"] == "running"
        assert not any(m for m in cleanup._lab_mounts() if "/nodes/" in m)  # overlay not in the host table
        extra.node_down(name)
        assert _traces(extra) == NOTHING
    extra.node_up(name, wait=True)
    extra.node_up(name, wait=True)  # idempotent: same supervisor
    sup = node.supervisor_pid(extra.paths(name))
    extra.node_up(name)
    assert node.supervisor_pid(extra.paths(name)) == sup


def test_guest_reboot_comes_back(extra: Lab) -> None:
    name = extra.plan.nodes[0].name
    extra.node_up(name, wait=True)
    before = node.read_state(extra.paths(name))["boots"]
    old_init = node.init_pid(extra.plan.nodes[0])
    extra.exec(name, ["sh", "-c", "echo kept > /var/tmp/marker; systemctl reboot"], timeout=30)
    assert procs.wait_until(lambda: node.read_state(extra.paths(name)).get("boots", 0) > before, 30)
    assert procs.wait_until(lambda: node.init_pid(extra.plan.nodes[0]) not in (None, old_init), 30)
    extra.wait_ssh([name], 30)
    assert _ssh_ok(extra) == name
    assert extra.exec(name, ["cat", "/var/tmp/marker"]).stdout == "kept\n"  # upper layer survives reboot
    assert extra.status()["nodes"][name]["state"] == "running"


def test_guest_poweroff_stays_off(extra: Lab) -> None:
    name = extra.plan.nodes[0].name
    extra.node_up(name, wait=True)
    extra.exec(name, ["systemctl", "poweroff"], timeout=30)
    assert procs.wait_until(lambda: node.supervisor_pid(extra.paths(name)) is None, 30)
    assert node.read_state(extra.paths(name))["state"] == "off"
    extra.node_down(name)  # removes the netns left behind
    assert _traces(extra) == NOTHING


def test_reset_and_snapshot_restore(extra: Lab) -> None:
    name = extra.plan.nodes[0].name
    extra.node_up(name, wait=True)
    key_before = Path(extra.known_hosts_path).read_text()
    extra.exec(name, ["sh", "-c", "echo provisioned > /etc/marker; rm /etc/issue.net"], timeout=30)
    extra.snapshot(name, "t1")
    assert extra.healthy(name)  # snapshot restarts a running node
    extra.reset(name)
    assert extra.exec(name, ["cat", "/etc/marker"]).returncode != 0
    assert extra.exec(name, ["test", "-e", "/etc/issue.net"]).returncode == 0
    assert _ssh_ok(extra) == name and Path(extra.known_hosts_path).read_text() == key_before
    extra.restore(name, "t1")
    assert extra.exec(name, ["cat", "/etc/marker"]).stdout == "provisioned\n"
    assert extra.exec(name, ["test", "-e", "/etc/issue.net"]).returncode != 0  # whiteout kept
    assert _ssh_ok(extra) == name


def test_recovers_from_a_crashed_supervisor(extra: Lab) -> None:
    n = extra.plan.nodes[0]
    extra.node_up(n.name, wait=True)
    sup = node.supervisor_pid(extra.paths(n.name))
    assert sup is not None
    os.kill(sup, signal.SIGKILL)  # the guest keeps running, orphaned
    assert procs.wait_until(lambda: not procs.pid_alive(sup), 5)
    assert not extra.healthy(n.name)
    extra.node_up(n.name, wait=True)
    assert _ssh_ok(extra) == n.name
    assert (
        len(
            [
                p
                for p in node.node_pids(n)
                if procs.container_init(procs.ns_inode(net.NETNS_DIR / n.netns) or 0) == p
            ]
        )
        == 1
    )
    extra.node_down(n.name)
    assert _traces(extra) == NOTHING


def test_units_are_per_node(extra: Lab) -> None:
    """Stopping a unit in one node (systemd kills by cgroup) leaves the other node's unit running."""
    from clusterforge.lab import cgroups
    from clusterforge.lab.lab import ssh_banner

    one, two = extra.plan.nodes[0], extra.plan.nodes[1]
    for n in (one, two):
        extra.node_up(n.name, wait=True)
    for n in (one, two):
        assert _booted(extra, n.name) in ("running", "degraded")
    top = cgroups.node_cgroups(extra.cluster, one.name)
    assert top and all((d / "payload").is_dir() for d in top)
    show = ["systemctl", "show", "--property=ActiveState,MainPID", "ssh"]
    before = extra.exec(two.name, show).stdout
    assert "ActiveState=active" in before
    assert extra.exec(one.name, ["systemctl", "stop", "ssh"]).returncode == 0
    try:
        assert not ssh_banner(one.mgmt_ip)
        assert extra.exec(two.name, show).stdout == before  # the same sshd, still running
        assert ssh_banner(two.mgmt_ip, timeout=10)
    finally:
        extra.exec(one.name, ["systemctl", "start", "ssh"])
    extra.nodes_down([one, two])
    assert _traces(extra) == NOTHING and not any(d.exists() for d in top)


def test_fresh_rails_start_at_1500_up_without_address(extra: Lab) -> None:
    n = extra.plan.nodes[0]
    extra.node_up(n.name, wait=True)
    for r in n.rails:
        out = extra.exec(n.name, ["ip", "-o", "-4", "addr", "show", "dev", r.netdev]).stdout
        assert out == ""
        link = extra.exec(n.name, ["ip", "-o", "link", "show", "dev", r.netdev]).stdout
        assert " mtu 1500 " in link and ",UP," in link and r.mac in link


def test_status_json_serialisable(extra: Lab) -> None:
    json.dumps(extra.status())
