"""The SSH side of a run: one private ssh_config per run (from the inventory's connection variables over
every layer, then the user's own configuration, then clusterforge's defaults: strict host keys, one
ControlMaster per node), the reachability probe that opens each node's master, and `ssh_argv`, the one
builder of an `ssh` command line (certification, burn-in, the lab)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.errors import ClusterforgeError
from clusterforge.remote.inventory import connection_vars, inventory_sources

SSH_PROBE_S = 60  # a slow login (pam_systemd waits up to 25 s on a busy logind) is not an unreachable node
#: how long a node that answers SSH may still be starting its units (sshd comes up before the units that
#: apply non-persistent settings at boot, e.g. RoCE QoS): measured then, those would read as wrong
BOOT_WAIT_S = 180
#: systemd's states (`systemctl is-system-running`) in which a node is not (yet, or any more) in service
NOT_BOOTED = frozenset({"initializing", "starting", "stopping", "maintenance"})


def ssh_argv(
    target: str,
    *cmd: str,
    config: Path | None = None,
    identity: Path | None = None,
    options: Mapping[str, str] | None = None,
) -> list[str]:
    """``ssh [-F config] [-i identity] [-o K=V ...] target cmd...``: a real argv, never shell text; `cmd`
    is handed to the remote shell as ssh does (build it with `clusterforge.remote.commands`)."""
    argv = ["ssh"]
    if config is not None:
        argv += ["-F", str(config)]
    if identity is not None:
        argv += ["-i", str(identity)]
    for key, value in (options or {}).items():
        argv += ["-o", f"{key}={value}"]
    return [*argv, target, *cmd]


@dataclass
class SshSetup:
    """A private ssh_config for one run (`ssh -F`): one `Host <node>` block per node from the inventory's
    connection variables over every layer (generated, then the site layer), then the user's own ssh
    configuration, then clusterforge's defaults (strict host keys, a ControlMaster per node under a short
    private folder: socket paths must stay < 104 bytes). First value wins, as in ssh itself."""

    folder: Path
    config: Path
    nodes: list[str] = field(default_factory=list)

    def target(self, node: str) -> str:
        return node  # the Host alias of the node's block

    def close(self) -> None:
        for node in self.nodes:
            subprocess.run(
                ssh_argv(self.target(node), "-O", "exit", config=self.config),
                capture_output=True,
                timeout=10,
                check=False,
            )
        shutil.rmtree(self.folder, ignore_errors=True)


def _ssh_options(conn: dict[str, Any], address: str) -> dict[str, str]:
    """ssh_config options of one node from Ansible's connection variables (`-o K=V`, `-J`, `-p`, `-i`)."""
    opts: dict[str, str] = {"HostName": str(conn.get("ansible_host") or address)}
    if conn.get("ansible_user"):
        opts["User"] = str(conn["ansible_user"])
    if conn.get("ansible_port"):
        opts["Port"] = str(conn["ansible_port"])
    if conn.get("ansible_ssh_private_key_file"):
        opts |= {"IdentityFile": str(conn["ansible_ssh_private_key_file"]), "IdentitiesOnly": "yes"}
    args = shlex.split(f"{conn.get('ansible_ssh_common_args', '')} {conn.get('ansible_ssh_extra_args', '')}")
    flags = {"-J": "ProxyJump", "-p": "Port", "-i": "IdentityFile", "-l": "User"}
    for i, a in enumerate(args[:-1]):
        if a == "-o" and "=" in args[i + 1]:
            k, v = args[i + 1].split("=", 1)
            opts.setdefault(k.strip(), v.strip())
        elif a in flags:
            opts.setdefault(flags[a], args[i + 1])
    return opts


# ssh_config keywords whose value is the rest of the line, taken as written (a command): never quoted
REST_OF_LINE = frozenset({"proxycommand", "localcommand", "remotecommand", "knownhostscommand"})


def _config_line(key: str, value: str) -> str:
    if any(c in value for c in "\n\r\0") or any(c in key for c in " \t\n\r\0=\"'"):
        raise ClusterforgeError(f"SSH setting {key!r}: a value with a line break cannot go into ssh_config")
    if key.lower() in REST_OF_LINE:
        return f"  {key} {value}"
    return (
        f'  {key} "{value}"' if (" " in value or "\t" in value) and '"' not in value else f"  {key} {value}"
    )


def ssh_setup(plan_doc: dict[str, Any], inventory: Path, nodes: list[str]) -> SshSetup:
    """ssh_config for `nodes`: user, port, key, jump host and `-o` options as Ansible would use them
    (so a site setting reaches Ansible, certification and burn-in alike); StrictHostKeyChecking stays on
    unless the inventory or the user's ssh configuration turns it off."""
    folder = Path(tempfile.mkdtemp(prefix="cf-ssh-", dir="/tmp"))
    try:
        return _write_ssh_config(folder, plan_doc, inventory, nodes)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_ssh_config(folder: Path, plan_doc: dict[str, Any], inventory: Path, nodes: list[str]) -> SshSetup:
    conns = connection_vars(inventory_sources(inventory, folder), nodes)
    addresses = {n["name"]: n["mgmt_ip"] for n in plan_doc["nodes"] if n["name"] in nodes}
    lines: list[str] = []
    for node in nodes:
        opts = _ssh_options(conns.get(node, {}), addresses.get(node, node))
        lines += [f"Host {node}", *(_config_line(k, v) for k, v in opts.items())]
    # the user's and the system's own configuration, for whatever the inventory does not set
    lines += ["Match all", "  Include ~/.ssh/config", "  Include /etc/ssh/ssh_config"]
    defaults = {
        "User": "root",
        "StrictHostKeyChecking": "yes",
        "BatchMode": "yes",
        "ConnectTimeout": "5",
        "ServerAliveInterval": "5",
        "ServerAliveCountMax": "8",  # 40 s: a busy logind can take 25 s to open a session
        "LogLevel": "ERROR",
        "ControlMaster": "auto",
        "ControlPath": f"{folder}/%C",
        "ControlPersist": "600",
    }
    lines += ["Host *", *(_config_line(k, v) for k, v in defaults.items())]
    config = folder / "ssh_config"
    config.write_text("\n".join(lines) + "\n")
    return SshSetup(folder, config, list(nodes))


def reachable(ssh: SshSetup, node: str, tries: int = 3) -> tuple[bool, str]:
    """Open the node's ControlMaster (the one SSH session every check then reuses).

    A slow login (a loaded host) can outlast the client's wait for the master it just forked ("Failed to
    connect to new control master"); the master is still coming up, so that case is tried again."""
    ok, why = _probe(ssh, node)
    while not ok and ("control master" in why or "not responding" in why) and tries > 1:
        tries -= 1
        time.sleep(1)
        ok, why = _probe(ssh, node)
    return ok, why


def run_on(
    ssh: SshSetup, node: str, command: str, timeout: float, stdin_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` (remote shell text built by `clusterforge.remote.commands`, or a constant) on `node` over
    the run's ssh_config, its output as text; `stdin_text`: what the remote command reads (a program for
    `python3 -`), else nothing; `subprocess.TimeoutExpired` past `timeout`."""
    argv = ssh_argv(ssh.target(node), command, config=ssh.config)
    if stdin_text is not None:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, input=stdin_text, check=False
        )
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
    )


def booted(ssh: SshSetup, node: str, wait_s: int = BOOT_WAIT_S) -> tuple[bool, str]:
    """Whether systemd finished starting the node (`is-system-running --wait`, at most `wait_s` on the node),
    with its state word. `running` and `degraded` are booted (a failed unit is the checks' business); a
    node without systemd as init (`offline`, `unknown`, no systemctl) is taken as booted: nothing to wait
    for. Run over the node's ControlMaster (after `reachable`)."""
    wait = f"timeout {int(wait_s)} systemctl is-system-running --wait >/dev/null 2>&1"
    script = f"{wait}; systemctl is-system-running"
    try:
        p = run_on(ssh, node, script, wait_s + SSH_PROBE_S)
    except subprocess.TimeoutExpired:
        return False, f"no answer to systemctl is-system-running within {wait_s + SSH_PROBE_S} s"
    words = p.stdout.split()
    state = words[-1] if words else "unknown"
    return state not in NOT_BOOTED, state


def _probe(ssh: SshSetup, node: str) -> tuple[bool, str]:
    try:
        p = run_on(ssh, node, "true", SSH_PROBE_S)
    except subprocess.TimeoutExpired:
        return False, f"no SSH answer within {SSH_PROBE_S} s"
    if p.returncode != 0:
        return False, (p.stderr.strip().splitlines() or [f"ssh exit {p.returncode}"])[-1]
    return True, ""
