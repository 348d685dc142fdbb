"""Host networking of the lab: the management bridge, rail bridges, one netns + veths per node."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import subprocess
from pathlib import Path

from clusterforge.lab import config, names
from clusterforge.lab.labplan import LabNode, LabPlan

log = logging.getLogger(__name__)
NETNS_DIR = Path("/run/netns")


def ip(*args: str, check: bool = True, netns: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    return subprocess.run(argv, check=check, text=True, capture_output=True)


def ip_batch(lines: list[str], netns: str | None = None) -> None:
    """Run `ip -batch` (one process for many changes); raises with ip's message on failure."""
    if not lines:
        return
    argv = ["ip", *(["-n", netns] if netns else []), "-batch", "-"]
    r = subprocess.run(argv, input="\n".join(lines) + "\n", text=True, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip -batch failed: {r.stderr.strip()}\n" + "\n".join(lines))


def links() -> dict[str, dict[str, object]]:
    out = ip("-j", "link", "show").stdout
    return {d["ifname"]: d for d in json.loads(out or "[]")}


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def bridge_mac(name: str) -> str:
    """A fixed MAC, so the bridge never takes a port's (nodes' ARP entries for the host stay true)."""
    h = hashlib.sha256(name.encode()).digest()
    return "02:cf:ff:" + ":".join(f"{b:02x}" for b in h[:3])


def _bridge_lines(name: str, mtu: int | None) -> list[str]:
    lines = [
        f"link add {name} address {bridge_mac(name)} type bridge stp_state 0 forward_delay 0 mcast_snooping 0"
    ]
    if mtu:
        lines.append(f"link set {name} mtu {mtu}")
    lines.append(f"link set {name} up")
    return lines


def ensure_bridges(plan: LabPlan) -> None:
    """cfbr0 with the host's management address, and one bridge per (fabric, rail) of the plan."""
    lines: list[str] = []
    if not link_exists(config.MGMT_BRIDGE):
        lines += _bridge_lines(config.MGMT_BRIDGE, None)
    for br in sorted({r.bridge for n in plan.nodes for r in n.rails}):
        if not link_exists(br):
            lines += _bridge_lines(br, config.RAIL_MTU)
    ip_batch(lines)
    no_forwarding(config.MGMT_BRIDGE)
    prefix = config.MGMT_NETWORK.split("/")[1]
    addrs = ip("-j", "addr", "show", "dev", config.MGMT_BRIDGE).stdout
    have = {a["local"] for d in json.loads(addrs or "[]") for a in d.get("addr_info", [])}
    if config.HOST_IP not in have:
        ip("addr", "add", f"{config.HOST_IP}/{prefix}", "dev", config.MGMT_BRIDGE)
    ip("link", "set", config.MGMT_BRIDGE, "up")


def no_forwarding(bridge: str, proc: Path = Path("/proc/sys/net/ipv4/conf")) -> None:
    """The host never routes what the nodes send it (`net.ipv4.conf.<bridge>.forwarding=0`: packets
    received on the bridge are not forwarded, whatever the host's global ip_forward), so the nodes' default
    route via the host's address reaches the host only: no route out. The setting goes with the bridge."""
    (proc / bridge / "forwarding").write_text("0\n")


def remove_bridges() -> list[str]:
    """Delete every lab bridge (cfbr0, cfbr-*). Returns their names."""
    gone = [name for name in links() if names.is_lab_bridge(name)]
    ip_batch([f"link del {name}" for name in gone])
    return gone


def netns_exists(ns: str) -> bool:
    return (NETNS_DIR / ns).exists()


def create_node_net(node: LabNode) -> None:
    """Netns + veths of one node: management end configured, rail ends up at MTU 1500 without address."""
    if netns_exists(node.netns):
        delete_node_net(node)
    ip("netns", "add", node.netns)
    hm = names.lab_mac(0, node.ordinal, host_side=True)
    lines = [
        f"link add {node.mgmt_host_link} address {hm} type veth peer name {node.mgmt_netdev} "
        f"address {node.mgmt_mac} netns {node.netns}",
        f"link set {node.mgmt_host_link} master {config.MGMT_BRIDGE} up",
    ]
    for r in node.rails:
        rm = names.lab_mac(1 + r.index, node.ordinal, host_side=True)
        lines += [
            f"link add {r.host_link} address {rm} mtu {config.RAIL_MTU} type veth peer name {r.netdev} "
            f"address {r.mac} mtu 1500 netns {node.netns}",
            f"link set {r.host_link} master {r.bridge} up",
        ]
    ip_batch(lines)
    ip_batch(node_lines(node), netns=node.netns)
    flush_neighbour(node)


def node_lines(node: LabNode) -> list[str]:
    """The node's own network configuration, as the site's OS installer would leave it (`ip -batch` lines
    run in the node's netns): loopback, the management address and, when the plan declares a gateway, the
    default route through it; rail links up without an address (the roles configure them). The netns
    outlives the node's reboots (the supervisor boots the same netns again), so this stays across them."""
    prefix = config.MGMT_NETWORK.split("/")[1]
    lines = [
        "link set lo up",
        f"link set {node.mgmt_netdev} up",
        f"addr add {node.mgmt_ip}/{prefix} dev {node.mgmt_netdev}",
    ]
    if node.mgmt_gateway:
        lines.append(f"route replace default via {node.mgmt_gateway} dev {node.mgmt_netdev}")
    return lines + [f"link set {r.netdev} up" for r in node.rails]


def delete_node_net(node: LabNode) -> None:
    """Remove the node's netns (its veth ends go with it, taking the host ends) and leftover host ends."""
    if netns_exists(node.netns):
        ip("netns", "del", node.netns, check=False)
    for name in [node.mgmt_host_link, *(r.host_link for r in node.rails)]:
        if link_exists(name):
            ip("link", "del", name, check=False)
    flush_neighbour(node)


def flush_neighbour(node: LabNode) -> None:
    """Forget the host's ARP entry for the node (a stale one once delayed SSH by 14 s)."""
    if link_exists(config.MGMT_BRIDGE):
        ip("neigh", "flush", "to", node.mgmt_ip, "dev", config.MGMT_BRIDGE, check=False)


def lab_netns() -> list[str]:
    """Every netns named like a lab node's (any cluster)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(config.NETNS_PREFIX))


def stray_links() -> list[str]:
    return [name for name in links() if names.is_lab_link(name)]


def release_netns_dir() -> None:
    """`ip netns add` leaves /run/netns bind-mounted on itself; undo that once no netns is left."""
    if not NETNS_DIR.is_dir() or any(NETNS_DIR.iterdir()):
        return
    for _ in range(4):  # os.path.ismount misses a bind mount of the same filesystem: read mountinfo
        if not is_mountpoint(NETNS_DIR):
            break
        subprocess.run(["umount", str(NETNS_DIR)], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        NETNS_DIR.rmdir()


def is_mountpoint(path: Path) -> bool:
    target = str(path)
    return any(line.split()[4] == target for line in Path("/proc/self/mountinfo").read_text().splitlines())
