"""`Lab`: the Python API of the local lab (see docs/lab.md)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from clusterforge.errors import ClusterforgeError
from clusterforge.lab import (
    bmc,
    cgroups,
    cleanup,
    config,
    hostsys,
    image,
    labplan,
    lldp_emulator,
    names,
    net,
    node,
    procs,
    prometheus,
    sshkeys,
    storage,
)
from clusterforge.lab.labplan import LabNode, LabPlan
from clusterforge.lab.repo import AptProxy, AptRepo
from clusterforge.lab.slurm import SlurmController, controller_name
from clusterforge.remote.ssh import ssh_argv

log = logging.getLogger(__name__)
DISKS = ".disks"  # a snapshot's scratch disks, beside its upper layer: snapshots/<node>/<tag>.disks


class LabError(ClusterforgeError):
    """The lab could not do what was asked (node not running, boot timeout, ...)."""


class Lab:
    def __init__(self, plan: str | Path | dict[str, Any] | LabPlan, state_base: Path | None = None) -> None:
        self.plan: LabPlan = labplan.load(plan)
        self.cluster = self.plan.cluster
        self.root = (state_base or config.STATE_BASE) / self.cluster
        self.ssh_dir = self.root / "ssh"
        self.slurm = SlurmController(self.root)
        self.repo = AptRepo(self.root)
        self.proxy = AptProxy(self.root)
        self._lower: Path | None = None

    # -- paths ---------------------------------------------------------------------------------------
    @property
    def known_hosts_path(self) -> Path:
        return self.ssh_dir / "known_hosts"

    @property
    def ssh_key_path(self) -> Path:
        return self.ssh_dir / "id_ed25519"

    @property
    def slurm_conf_path(self) -> Path:
        return self.slurm.conf

    def slurm_env(self) -> dict[str, str]:
        """Environment for sinfo/scontrol/srun on the host."""
        return self.slurm.env()

    def paths(self, name: str) -> node.NodePaths:
        return node.NodePaths(self.root / "nodes" / name)

    def ssh_argv(self, name: str, *cmd: str) -> list[str]:
        """A real `ssh` invocation as root with the lab's key, strict host keys against its known_hosts."""
        target = f"root@{self.plan.node(name).mgmt_ip}"
        return ssh_argv(
            target, *cmd, identity=self.ssh_dir / "id_ed25519", options=sshkeys.ssh_options(self.ssh_dir)
        )

    # -- infrastructure ------------------------------------------------------------------------------
    def lower(self) -> Path:
        if self._lower is None:
            self._lower = image.ensure_image()
        return self._lower

    def _prereqs(self) -> None:
        """What a single node needs: image, bridges, keys (cheap when present)."""
        self._check_conflicts()
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        hostsys.raise_limits()
        self.lower()
        net.ensure_bridges(self.plan)
        sshkeys.client_key(self.ssh_dir, self.cluster)
        sshkeys.write_known_hosts(self.ssh_dir, self.plan.nodes)
        self.slurm.ensure_key()

    def _others(self) -> list[Path]:
        return [d for d in self.root.parent.iterdir() if d.is_dir() and d != self.root]

    def _check_conflicts(self) -> None:
        """Refuse to share an address or a MAC with another cluster's running nodes (cfbr0 and the rail
        bridges are the host's, shared by every lab on it)."""
        mine = {pair: n.name for n in self.plan.nodes for pair in labplan.l2_identity(n)}
        if not self.root.parent.is_dir():
            return
        for other in self._others():
            for f in other.glob("nodes/*/node-plan.json"):
                if node.supervisor_pid(node.NodePaths(f.parent)) is None:
                    continue
                theirs = labplan.node_of(other.name, json.loads(f.read_text()))
                clash = sorted(p for p in (labplan.l2_identity(theirs) if theirs else set()) if p in mine)
                if clash:
                    raise LabError(
                        f"{other.name}/{f.parent.name} runs with {', '.join(a for _, a in clash)}, as this "
                        f"plan's {mine[clash[0]]}: "
                        f"stop that lab first (clusterforge lab down --plan ...) or give the nodes other "
                        f"addresses and ordinals"
                    )

    def infra_up(self) -> None:
        """Image, bridges, SSH keys, Slurm controller, vendor apt repository, Debian caching proxy, one BMC
        per plan node with a `bmc` (idempotent: what runs as configured is kept)."""
        self._prereqs()
        for other in self._others():
            if SlurmController(other).running()["slurmctld"] is not None:
                raise LabError(
                    f"the lab of cluster {other.name} runs its Slurm controller (port "
                    f"{config.SLURMCTLD_PORT}): stop it first (clusterforge lab down --plan ...)"
                )
        self.slurm.start(self.plan, os.cpu_count() or 1)
        self.repo.build()
        self.repo.start()
        try:  # the shared filesystem and the client binary the spec declares (JuiceFS on the host's Redis)
            storage.start(self.plan.raw, self.root, self.repo.root)
        except storage.StorageLabError as e:
            raise LabError(str(e)) from e
        self.proxy.start(image.debian_mirror(), image.security_mirror())
        self._bmcs_up()
        # the leaf switches' LLDP (RoCE rails): what each node's lldpd hears, from the lab's real wiring
        lldp_emulator.start(self.plan.raw, self.root)
        # a site's Prometheus: every node's exporters, the project's alert rules
        prometheus.start(self.plan.raw, self.root)

    def _bmcs_up(self) -> None:
        """The lab BMCs (clusterforge.lab.bmc): started for the plan's nodes with a `bmc`; none when the plan
        gives none (BMCs left from an earlier plan are stopped)."""
        if not any(n.raw.get("bmc") for n in self.plan.nodes):
            bmc.stop_bmcs(self.root)
            return
        try:
            urls = bmc.start_bmcs(self.plan.raw, self.root)
        except RuntimeError as e:  # a port taken, the emulator failing to start: say which and why
            raise LabError(str(e)) from e
        log.info("lab %s: %d BMCs (%s ...)", self.cluster, len(urls), next(iter(urls.values()), ""))

    def bmc_env(self) -> dict[str, str]:
        """CLUSTERFORGE_BMC_USER / _PASSWORD_FILE of the lab BMCs ({} before they first ran)."""
        return bmc.bmc_env(self.root)

    def infra_down(self) -> None:
        """Stop the BMCs, the controller and the repository server; remove bridges when no node is left."""
        bmc.stop_bmcs(self.root)
        lldp_emulator.stop(self.root)
        prometheus.stop(self.root)
        storage.stop(self.root)
        self.slurm.stop()
        self.repo.stop()
        self.proxy.stop()
        if not net.lab_netns():
            net.remove_bridges()
            net.release_netns_dir()
            hostsys.restore_limits()

    # -- whole lab -----------------------------------------------------------------------------------
    def up(self, wait: bool = True, timeout: float = 120.0) -> None:
        t0 = time.monotonic()
        self.infra_up()
        t1 = time.monotonic()
        for n in self.plan.nodes:
            self.node_up(n.name, prepared=True)
        if wait:
            self.wait_ssh(timeout=timeout)
        log.info(
            "lab %s: infra %.1f s, %d nodes %s %.1f s",
            self.cluster,
            t1 - t0,
            len(self.plan.nodes),
            "SSH-reachable in" if wait else "started in",
            time.monotonic() - t1,
        )

    def down(self) -> None:
        """Stop every node of this cluster (also ones the plan no longer lists) and the infrastructure; the
        controller forgets the cluster's nodes (drain reasons, states), as for a cluster taken down."""
        self.nodes_down(self._known_nodes())
        self.infra_down()
        self.slurm.forget()

    def _known_nodes(self) -> list[LabNode]:
        out = {n.name: n for n in self.plan.nodes}
        for f in sorted((self.root / "nodes").glob("*/node-plan.json")):
            raw = json.loads(f.read_text())
            stale = labplan._node(self.cluster, 0, raw, [])
            if stale is not None and stale.name not in out:
                out[stale.name] = stale
        return list(out.values())

    # -- one node ------------------------------------------------------------------------------------
    def healthy(self, name: str) -> bool:
        n = self.plan.node(name)
        p = self.paths(name)
        return (
            node.supervisor_pid(p) is not None
            and node.read_state(p).get("state") == "running"
            and node.init_pid(n) is not None
        )

    def node_up(self, name: str, wait: bool = False, timeout: float = 60.0, prepared: bool = False) -> None:
        """Boot one node (idempotent). `prepared`: the caller has just run the shared prerequisites."""
        n = self.plan.node(name)
        p = self.paths(name)
        if self.healthy(name):
            return
        if not prepared:
            self._prereqs()
        sup = node.supervisor_pid(p)
        if sup is not None or net.netns_exists(n.netns) or cgroups.pids(self.cluster, name):
            log.info("%s: cleaning up a previous run", name)
            node.signal_stop(p)
            node.finish_stop(n, p, sup, timeout=3.0)
        fresh = not p.upper.exists()
        p.upper.mkdir(parents=True, exist_ok=True)
        node.inject_identity(self.plan, n, p.upper, self.lower(), self.ssh_dir, controller_name(), fresh)
        (p.dir / "node-plan.json").write_text(json.dumps(n.raw))
        try:  # its disks: a blank sparse file per declared scratch device, on a loop device
            disks = storage.attach_scratch(p.dir, storage.scratch_names(n.raw))
        except storage.StorageLabError as e:
            raise LabError(f"{name}: {e}") from e
        node.write_supervisor_config(n, p, self.lower(), storage.nspawn_binds(p.dir, disks))
        net.create_node_net(n)
        node.start_supervisor(n, p)
        if wait:
            self.wait_ssh([name], timeout)

    def node_down(self, name: str) -> None:
        self.nodes_down([self.plan.node(name)])

    def nodes_down(self, nodes: Iterable[LabNode]) -> None:
        """Stop nodes for good, in parallel: all are asked to power off, then each is waited for."""
        pending = [(n, self.paths(n.name)) for n in nodes]
        sups = [node.signal_stop(p) for _, p in pending]
        for (n, p), sup in zip(pending, sups, strict=True):
            node.finish_stop(n, p, sup)

    def reset(self, name: str, wait: bool = True) -> None:
        """Back to the pristine image (same identity and host key): stop, drop the upper layer, start."""
        self.node_down(name)
        shutil.rmtree(self.paths(name).upper, ignore_errors=True)
        storage.wipe_scratch(self.paths(name).dir)  # blank disks, as a reinstalled server's
        self.node_up(name, wait=wait)

    def snapshot(self, name: str, tag: str = "default") -> Path:
        """Copy the node's upper layer and its scratch disks (the node is stopped for the copy and started
        again if it ran)."""
        p = self.paths(name)
        if not p.upper.exists():
            raise LabError(f"{name} has no state to snapshot: bring it up first")
        running = self.healthy(name)
        if running:
            self.node_down(name)
        dest = self.root / "snapshots" / name / tag
        _copy_tree(p.upper, dest)
        disks = dest.with_name(tag + DISKS)
        shutil.rmtree(disks, ignore_errors=True)
        if (p.dir / "scratch").is_dir():
            _copy_tree(p.dir / "scratch", disks)  # sparse files stay sparse (cp -a)
        if running:
            self.node_up(name, wait=True)
        return dest

    def restore(self, name: str, tag: str = "default", wait: bool = True) -> None:
        src = self.root / "snapshots" / name / tag
        if not src.is_dir():
            raise LabError(f"no snapshot {tag!r} of {name} (have: {self.snapshots(name)})")
        self.node_down(name)
        _copy_tree(src, self.paths(name).upper)
        storage.wipe_scratch(self.paths(name).dir)
        if src.with_name(tag + DISKS).is_dir():
            _copy_tree(src.with_name(tag + DISKS), self.paths(name).dir / "scratch")
        self.node_up(name, wait=wait)

    def snapshots(self, name: str) -> list[str]:
        d = self.root / "snapshots" / name
        return sorted(p.name for p in d.iterdir() if not p.name.endswith(DISKS)) if d.is_dir() else []

    # -- inside a node -------------------------------------------------------------------------------
    def exec(
        self,
        name: str,
        argv: Sequence[str],
        input: str | bytes | None = None,
        timeout: float = 60.0,
        check: bool = False,
        text: bool = True,
    ) -> subprocess.CompletedProcess[Any]:
        """Run argv inside the node (nsenter into its namespaces as root; works without sshd)."""
        pid = node.init_pid(self.plan.node(name))
        if pid is None:
            raise LabError(f"{name} is not running")
        cmd = [
            "nsenter",
            "-t",
            str(pid),
            "-m",
            "-u",
            "-i",
            "-n",
            "-p",
            "-r",
            "-w",
            "--",
            "/usr/bin/env",
            "-i",
            f"PATH={config.GUEST_PATH}",
            "HOME=/root",
            "LANG=C.UTF-8",
            "USER=root",
            "LOGNAME=root",
            "TERM=dumb",
            *argv,
        ]
        if isinstance(input, str) and not text:
            input = input.encode()
        return subprocess.run(cmd, input=input, timeout=timeout, check=check, capture_output=True, text=text)

    def set_rail_carrier(self, name: str, rail: int, up: bool) -> None:
        """Plug or pull rail `rail`'s cable: the host end goes down, the node's netdev loses carrier."""
        n = self.plan.node(name)
        r = next((r for r in n.rails if r.index == rail), None)
        if r is None:
            raise LabError(f"{name} has no rail {rail}")
        net.ip("link", "set", r.host_link, "up" if up else "down")

    def wait_ssh(self, names: Iterable[str] | None = None, timeout: float = 60.0) -> float:
        """Wait until every named node's sshd answers with its banner. Returns seconds waited."""
        t0 = time.monotonic()
        todo = {n: self.plan.node(n) for n in (names or [x.name for x in self.plan.nodes])}
        while todo:
            for nm in [nm for nm, n in todo.items() if ssh_banner(n.mgmt_ip)]:
                del todo[nm]
            if not todo:
                break
            if time.monotonic() - t0 > timeout:
                detail = {nm: node.read_state(self.paths(nm)).get("state", "no supervisor") for nm in todo}
                raise LabError(
                    f"no SSH after {timeout:.0f}s from {detail} (logs: {self.root}/nodes/*/supervisor.log)"
                )
            time.sleep(0.1)
        return time.monotonic() - t0

    # -- looking -------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        nodes = {}
        for n in self._known_nodes():
            p = self.paths(n.name)
            st = node.read_state(p)
            sup = node.supervisor_pid(p)
            init = node.init_pid(n)
            state = (
                st.get("state", "absent")
                if sup is not None
                else ("stopped" if p.upper.exists() else "absent")
            )
            nodes[n.name] = {
                "state": state,
                "supervisor": sup,
                "init": init,
                "boots": st.get("boots", 0),
                "mgmt_ip": n.mgmt_ip,
                "ssh": bool(init) and ssh_banner(n.mgmt_ip, 0.3),
                "in_plan": n in self.plan.nodes,
                "pss_mib": round(procs.pss_kib(node.node_pids(n)) / 1024, 1) if init else 0,
                "snapshots": self.snapshots(n.name),
            }
        return {
            "cluster": self.cluster,
            "state_root": str(self.root),
            "image": str(self._lower or ""),
            "infra": {
                "bridge": net.link_exists(config.MGMT_BRIDGE),
                **self.slurm.running(),
                "apt_repo": self.repo.pid(),
                "lldp_emulator": lldp_emulator.running(self.root),
                "prometheus": prometheus.running(self.root),
                "prometheus_url": prometheus.url(),
                "redis": storage.redis_running(self.root),
                "apt_repo_url": self.repo.url,
                "apt_proxy": self.proxy.pid(),
                "apt_proxy_url": self.proxy.url,
                "bmcs": self._bmc_pids(),
            },
            "nodes": nodes,
            "known_hosts": str(self.known_hosts_path),
            "ssh_key": str(self.ssh_key_path),
            "slurm_conf": str(self.slurm_conf_path),
        }

    def leftovers(self) -> dict[str, list[str]]:
        """This cluster's traces on the host (all empty after `down()`); bridges count once no lab is left."""
        nodes = self._known_nodes()
        links = set(net.links())
        mine = {n.mgmt_host_link for n in nodes} | {r.host_link for n in nodes for r in n.rails}
        netns = [n.netns for n in nodes if net.netns_exists(n.netns)]
        return {
            "processes": [str(p) for p in node.stray_processes(self.root)],
            "cgroups": [c for c in cgroups.lab_cgroups() if f"/{cgroups.BASE}/{self.cluster}/" in c],
            "netns": netns,
            "links": sorted(links & mine),
            "bridges": sorted(b for b in links if names.is_lab_bridge(b)) if not net.lab_netns() else [],
            "mounts": [m for m in cleanup._lab_mounts() if str(self.root) in m or m.endswith(tuple(netns))],
            "loops": storage.lab_loops(self.root),
            "daemons": [f"{k}={v}" for k, v in self.slurm.running().items() if v]
            + ([f"apt={self.repo.pid()}"] if self.repo.pid() else [])
            + ([f"apt-proxy={self.proxy.pid()}"] if self.proxy.pid() else [])
            + ([f"prometheus={pid}"] if (pid := prometheus.running(self.root)) else [])
            + ([f"redis={pid}"] if (pid := storage.redis_running(self.root)) else [])
            + [f"bmc:{name}={pid}" for name, pid in self._bmc_pids().items() if pid],
        }

    def _bmc_pids(self) -> dict[str, int | None]:
        """{node: pid of its running BMC, or None} for every BMC this cluster's state root has a config of."""
        return {name: st["pid"] for name, st in bmc.bmc_status(self.root).items()}


def ssh_banner(ip: str, timeout: float = 0.5) -> bool:
    """True when something at ip:22 greets with an SSH banner."""
    try:
        with socket.create_connection((ip, 22), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def _copy_tree(src: Path, dest: Path) -> None:
    """Copy an overlay upper layer with owners, modes, xattrs (opaque dirs) and whiteouts kept."""
    tmp = dest.with_name(dest.name + ".cf-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", str(src), str(tmp)], check=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
