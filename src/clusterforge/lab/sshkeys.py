"""SSH identity of the lab: one client key for root logins, a host key per node, a lab known_hosts."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from clusterforge.lab.labplan import LabNode


def _keygen(path: Path, comment: str) -> None:
    if path.exists() and path.with_name(path.name + ".pub").exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".pub").unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def client_key(ssh_dir: Path, cluster: str) -> Path:
    """ssh/id_ed25519 (made once): the key Ansible and testinfra log in with as root."""
    key = ssh_dir / "id_ed25519"
    _keygen(key, f"clusterforge-lab@{cluster}")
    return key


def host_key(ssh_dir: Path, node: str) -> Path:
    """ssh/hostkeys/<node>/ssh_host_ed25519_key (made once, kept across reset so known_hosts stays true)."""
    key = ssh_dir / "hostkeys" / node / "ssh_host_ed25519_key"
    _keygen(key, f"root@{node}")
    return key


def public(key: Path) -> str:
    return key.with_name(key.name + ".pub").read_text().strip()


def known_hosts_lines(entries: Iterable[tuple[LabNode, str]]) -> list[str]:
    """`name,ip keytype key` per node, from (node, public key line) pairs (pure)."""
    lines = []
    for node, pub in entries:
        keytype, blob = pub.split()[:2]
        lines.append(f"{node.name},{node.mgmt_ip} {keytype} {blob}")
    return lines


def write_known_hosts(ssh_dir: Path, nodes: Iterable[LabNode]) -> Path:
    path = ssh_dir / "known_hosts"
    lines = known_hosts_lines((n, public(host_key(ssh_dir, n.name))) for n in nodes)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(path)
    return path


def ssh_options(ssh_dir: Path, connect_timeout: int = 15) -> dict[str, str]:
    """`-o` options of a lab login: strict host-key checking against the lab's known_hosts, its key only."""
    return {
        "UserKnownHostsFile": str(ssh_dir / "known_hosts"),
        "StrictHostKeyChecking": "yes",
        "IdentitiesOnly": "yes",
        "BatchMode": "yes",
        "ConnectTimeout": str(connect_timeout),
        "LogLevel": "ERROR",
    }
