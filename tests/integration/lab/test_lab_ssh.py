"""Every node answers real `ssh` with strict host-key checking against the lab's known_hosts."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.lab


def test_each_node_by_ssh_strict(lab: Any) -> None:
    for n in lab.plan.nodes:
        argv = lab.ssh_argv(n.name, "hostname; cat /etc/clusterforge/node.json")
        assert "StrictHostKeyChecking=yes" in argv
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0] == n.name
        assert f'"mgmt_ip": "{n.mgmt_ip}"' in r.stdout


def test_host_keys_differ_per_node(lab: Any) -> None:
    keys = [line.split()[2] for line in Path(lab.known_hosts_path).read_text().splitlines()]
    assert len(keys) == len(lab.plan.nodes) == len(set(keys))


def test_unknown_host_key_is_refused(lab: Any, tmp_path: Path) -> None:
    n = lab.plan.nodes[0]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    argv = [a.replace(str(lab.known_hosts_path), str(empty)) for a in lab.ssh_argv(n.name, "true")]
    for _ in range(3):  # a loaded host may time out the banner exchange: that proves nothing, try again
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if "timed out" not in r.stderr:
            break
    assert r.returncode != 0 and "verification failed" in r.stderr.lower(), r.stderr


def test_exec_works_without_sshd(lab: Any) -> None:
    n = lab.plan.nodes[-1]
    r = lab.exec(n.name, ["sh", "-c", "cat /etc/hostname; id -u"], timeout=30)
    assert r.returncode == 0 and r.stdout.split() == [n.name, "0"]
    r = lab.exec(n.name, ["cat"], input="through stdin\n", timeout=30)
    assert r.stdout == "through stdin\n"


def test_nodes_have_no_route_out(lab: Any) -> None:
    """A node's default route (the site's gateway, as the installer leaves it: the spec's
    addressing.gateway) is the lab host, which forwards nothing it receives on the bridge: no packet
    leaves the lab. A TCP connect to a public address never completes."""
    from clusterforge.lab import config

    node = lab.plan.nodes[0].name
    r = lab.exec(node, ["ip", "-4", "route", "show", "default"], timeout=30)
    assert r.returncode == 0
    assert r.stdout.split()[:5] in (
        [],
        ["default", "via", config.HOST_IP, "dev", lab.plan.nodes[0].mgmt_netdev],
    )
    forwarding = Path("/proc/sys/net/ipv4/conf") / config.MGMT_BRIDGE / "forwarding"
    assert forwarding.read_text().strip() == "0"
    r = lab.exec(node, ["timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/1.1.1.1/80"], timeout=30)
    assert r.returncode != 0
