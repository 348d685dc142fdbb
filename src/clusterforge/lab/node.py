"""One lab node on the host: its overlay upper (identity injected), its supervisor, its processes."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.lab import cgroups, config, names, net, procs, sshkeys, storage
from clusterforge.lab.labplan import LabNode, LabPlan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodePaths:
    dir: Path

    @property
    def cluster(self) -> str:
        return self.dir.parent.parent.name

    @property
    def upper(self) -> Path:
        return self.dir / "upper"

    @property
    def work(self) -> Path:
        return self.dir / "work"

    @property
    def merged(self) -> Path:
        return self.dir / "merged"

    @property
    def pidfile(self) -> Path:
        return self.dir / "supervisor.pid"

    @property
    def statefile(self) -> Path:
        return self.dir / "state.json"

    @property
    def logfile(self) -> Path:
        return self.dir / "supervisor.log"


def _put(path: Path, data: str | bytes, mode: int = 0o644, owner: tuple[int, int] = (0, 0)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".cf-tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.chown(tmp, *owner)
    os.chmod(tmp, mode)
    tmp.rename(path)


def hosts_file(plan: LabPlan, controller: str) -> str:
    lines = [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{config.HOST_IP}\t{controller} clusterforge-lab-host",
    ]
    lines += [f"{n.mgmt_ip}\t{n.name}" for n in plan.nodes]
    return "\n".join(lines) + "\n"


def inject_identity(
    plan: LabPlan,
    node: LabNode,
    upper: Path,
    lower: Path,
    ssh_dir: Path,
    controller: str,
    fresh: bool,
) -> None:
    """Write what makes the shared image this node into its upper layer (before the overlay is mounted)."""
    etc = upper / "etc"
    _put(etc / "hostname", node.name + "\n")
    _put(etc / "machine-id", names.machine_id(plan.cluster, node.name) + "\n", 0o444)
    hk = sshkeys.host_key(ssh_dir, node.name)
    _put(etc / "ssh/ssh_host_ed25519_key", hk.read_bytes(), 0o600)
    _put(etc / "ssh/ssh_host_ed25519_key.pub", sshkeys.public(hk) + "\n")
    _put(upper / "root/.ssh/authorized_keys", sshkeys.public(ssh_dir / "id_ed25519") + "\n", 0o600)
    os.chmod(upper / "root/.ssh", 0o700)
    info = {
        "cluster": plan.cluster,
        "node": node.raw,
        "sku": plan.sku(node.sku),
        "host_ip": config.HOST_IP,
        "apt_repo": f"http://{config.HOST_IP}:{config.REPO_PORT}/nvidia",
        "lab": True,
    }
    _put(etc / "clusterforge/node.json", json.dumps(info, indent=1, sort_keys=True) + "\n")
    # The simulator's state, written once: faults and pending boot-time settings survive reboots.
    sim_state = upper / "var/lib/clusterforge-sim/state.json"
    if not sim_state.exists():
        from clusterforge.lab.sim.state import initial_state

        _put(sim_state, json.dumps(initial_state(plan.raw, node.name), indent=1, sort_keys=True) + "\n")
    if fresh or not (etc / "hosts").exists():
        _put(etc / "hosts", hosts_file(plan, controller))
    if fresh or not (etc / "resolv.conf").exists():
        # The site's resolver, as the installer leaves it: the lab host. It serves no DNS, so a lookup is
        # refused at once (ICMP port unreachable) instead of waiting out the image's copy of this machine's
        # resolver, which the nodes' default route (via the host, which forwards nothing) cannot reach.
        _put(etc / "resolv.conf", f"nameserver {config.HOST_IP}\n")


def nspawn_argv(node: LabNode, merged: Path, binds: list[str] | None = None) -> list[str]:
    """`binds`: the hardware handed to the node (`storage.nspawn_binds`: /dev/fuse, its scratch disks)."""
    return [
        "systemd-nspawn",
        "--quiet",
        "--boot",
        f"--directory={merged}",
        f"--machine={node.name}",
        "--register=no",
        "--keep-unit",
        f"--network-namespace-path={net.NETNS_DIR / node.netns}",
        "--capability=CAP_NET_ADMIN",
        "--resolv-conf=off",
        "--timezone=off",
        "--link-journal=no",
        "--console=read-only",
        *(binds or []),
    ]


def write_supervisor_config(
    node: LabNode, paths: NodePaths, lower: Path, binds: list[str] | None = None
) -> None:
    cfg: dict[str, Any] = {
        "node": node.name,
        "cluster": paths.cluster,
        "netns": node.netns,
        "netns_path": str(net.NETNS_DIR / node.netns),
        "mgmt_ip": node.mgmt_ip,
        "bridge": config.MGMT_BRIDGE,
        "lower": str(lower),
        "upper": str(paths.upper),
        "work": str(paths.work),
        "merged": str(paths.merged),
        "nspawn": nspawn_argv(node, paths.merged, binds),
        "env": dict(config.NSPAWN_ENV),
    }
    _put(paths.dir / "supervisor.json", json.dumps(cfg, indent=1))


def supervisor_pid(paths: NodePaths) -> int | None:
    pid = procs.live_pid(paths.pidfile)
    if pid is None:
        return None
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if b"clusterforge.lab.supervisor" in cmd else None


def read_state(paths: NodePaths) -> dict[str, Any]:
    try:
        return dict(json.loads(paths.statefile.read_text()))
    except (OSError, ValueError):
        return {}


def start_supervisor(node: LabNode, paths: NodePaths) -> int:
    """Detach `unshare --mount -- python -m clusterforge.lab.supervisor DIR` (survives the caller)."""
    paths.statefile.unlink(missing_ok=True)
    if paths.work.exists():
        shutil.rmtree(paths.work)  # overlayfs wants an empty workdir
    argv = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        sys.executable,
        "-m",
        "clusterforge.lab.supervisor",
        str(paths.dir),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "CF_LAUNCHER_MNTNS": str(os.stat("/proc/self/ns/mnt").st_ino),
    }
    return procs.spawn_daemon(argv, paths.pidfile, paths.logfile, env=env)


def node_pids(node: LabNode) -> list[int]:
    ino = procs.ns_inode(net.NETNS_DIR / node.netns)
    return procs.pids_in_netns(ino) if ino is not None else []


def init_pid(node: LabNode) -> int | None:
    ino = procs.ns_inode(net.NETNS_DIR / node.netns)
    return procs.container_init(ino) if ino is not None else None


def signal_stop(paths: NodePaths) -> int | None:
    """Ask the supervisor to stop the node for good (non-blocking). Returns its pid."""
    pid = supervisor_pid(paths)
    if pid is not None:
        procs.signal_all([pid], signal.SIGTERM)
    return pid


def finish_stop(node: LabNode, paths: NodePaths, sup: int | None, timeout: float = 12.0) -> None:
    """Wait for the supervisor, then kill whatever is left in the node's netns and remove its network."""
    if sup is not None and not procs.wait_until(lambda: not procs.pid_alive(sup), timeout):
        log.warning("%s: supervisor %d did not stop: killing", node.name, sup)
        procs.signal_all([sup], signal.SIGKILL)
    for _ in range(20):
        left = node_pids(node)
        if not left:
            break
        procs.signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
    for pid in stray_processes(paths.dir):
        procs.signal_all([pid], signal.SIGKILL)
    attached = storage.detach_scratch(paths.dir)
    if attached:
        log.warning("%s: scratch loop devices still attached: %s", node.name, attached)
    stuck = cgroups.remove(paths.cluster, node.name)
    if stuck:
        log.warning("%s: cgroups not removable: %s", node.name, stuck)
    net.delete_node_net(node)
    paths.pidfile.unlink(missing_ok=True)
    if paths.work.exists():
        shutil.rmtree(paths.work, ignore_errors=True)


def stray_processes(under: Path) -> list[int]:
    """Processes whose command line names a path under `under` (supervisors, nspawn, lab daemons)."""
    return procs.pids_by_cmdline(str(under))


def upper_size(paths: NodePaths) -> int:
    r = subprocess.run(["du", "-sk", str(paths.upper)], capture_output=True, text=True, check=False)
    return int(r.stdout.split()[0]) if r.returncode == 0 and r.stdout else 0
