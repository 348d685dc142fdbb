"""A jump host set only in the site layer (`inventory/site/<cluster>/`, here $CLUSTERFORGE_SITE) carries
certification and Ansible to a node: the node's sshd sees the logins come from the jump node, not from the
controller; a jump host that does not answer makes the node `error` (unreachable), never `fail`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.lab

CLI = [str(Path(sys.executable).parent / "clusterforge")]


def _conn(certify_lab: Any, node: str) -> dict[str, Any]:
    from clusterforge.remote.inventory import connection_vars

    return connection_vars([str(certify_lab.inventory / "hosts.yml")], [node])[node]


def _site(tmp: Path, target: str, jump_ip: str, jump_port: int, conn: dict[str, Any]) -> Path:
    """host_vars for `target`: everything as generated, plus a ProxyCommand through the jump node."""
    key = conn["ansible_ssh_private_key_file"]
    common = conn.get("ansible_ssh_common_args", "")
    proxy = (
        f"ssh -i {key} -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=5 {common} "
        f"-p {jump_port} -W %h:%p root@{jump_ip}"
    )
    site = tmp / "site"
    (site / "host_vars").mkdir(parents=True)
    (site / "host_vars" / f"{target}.yml").write_text(
        yaml.safe_dump({"ansible_ssh_common_args": f"{common} -o 'ProxyCommand={proxy}'"})
    )
    return site


def _cursor(certify_lab: Any, node: str) -> str:
    """The node journal's position now: logins after it are the ones the step under test made (a time
    window would also catch the previous test's last logins, a second before)."""
    out = certify_lab.lab.exec(node, ["journalctl", "--no-pager", "-n", "1", "-o", "cat", "--show-cursor"])
    text = out.stdout if hasattr(out, "stdout") else str(out)
    return text.strip().rsplit("-- cursor: ", 1)[1].split()[0]


def _logins_from(certify_lab: Any, node: str, cursor: str) -> list[str]:
    """The source addresses of the SSH logins `node`'s sshd accepted after `cursor` (its journal)."""
    out = certify_lab.lab.exec(  # type: ignore[attr-defined]
        node, ["journalctl", "--no-pager", "-o", "cat", f"--after-cursor={cursor}", "_COMM=sshd"]
    )
    text = out.stdout if hasattr(out, "stdout") else str(out)
    return [
        line.split(" from ", 1)[1].split()[0] for line in text.splitlines() if "Accepted publickey" in line
    ]


def _run(
    args: list[str], site: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERFORGE_SITE": str(site), **(env_extra or {})}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=900, check=False)


def test_certification_and_ansible_go_through_a_site_jump_host(certify_lab: Any, tmp_path: Path) -> None:
    nodes = {n["name"]: n for n in certify_lab.doc["nodes"]}
    target, jump = sorted(nodes)[-1], sorted(nodes)[0]
    jump_ip, target_ip = nodes[jump]["mgmt_ip"], nodes[target]["mgmt_ip"]
    site = _site(tmp_path, target, jump_ip, 22, _conn(certify_lab, target))
    spec = str(certify_lab.spec)

    since = _cursor(certify_lab, target)
    out = tmp_path / "quick.json"
    r = _run(
        # over SSH (the default takes the lab's Slurm job step, which logs in nowhere): the path under test
        ["certify", spec, "--via", "ssh", "--limit", target, "--format", "json", "--output", str(out)],
        site,
    )
    assert r.returncode == 0, f"certify through the jump host: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    verdicts = {n["node"]: n["verdict"] for n in json.loads(out.read_text())["nodes"]}
    assert verdicts == {target: "pass"}
    sources = _logins_from(certify_lab, target, since)
    assert sources and set(sources) == {jump_ip}, (
        f"{target} ({target_ip}) should see every login from the jump node {jump_ip}, saw {sources}"
    )

    # Ansible (provision --check, the preflight role only) over the same site setting
    since = _cursor(certify_lab, target)
    r = _run(["provision", spec, "--check", "--tags", "preflight", "--limit", target], site)
    assert r.returncode == 0, (
        f"provision --check through the jump host: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    )
    sources = _logins_from(certify_lab, target, since)
    assert sources and set(sources) == {jump_ip}, f"Ansible's logins to {target} came from {sources}"


def test_a_jump_host_that_does_not_answer_is_an_error_not_a_failure(certify_lab: Any, tmp_path: Path) -> None:
    nodes = {n["name"]: n for n in certify_lab.doc["nodes"]}
    target, jump = sorted(nodes)[-1], sorted(nodes)[0]
    site = _site(tmp_path, target, nodes[jump]["mgmt_ip"], 2, _conn(certify_lab, target))  # port 2: closed
    out = tmp_path / "quick.json"
    r = _run(
        [
            "certify",
            str(certify_lab.spec),
            "--tier",
            "quick",
            "--via",
            "ssh",
            "--limit",
            target,
            "--format",
            "json",
            "--output",
            str(out),
        ],
        site,
    )
    assert r.returncode != 0
    result = {n["node"]: n for n in json.loads(out.read_text())["nodes"]}[target]
    assert result["verdict"] == "error", result
