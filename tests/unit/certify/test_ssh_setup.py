"""Certification's SSH connections use the inventory's connection settings over every layer (generated,
then the site layer that `plan` never writes), then the user's own ~/.ssh/config, then clusterforge's
defaults. Checked with `ssh -G`, which prints the configuration ssh would use, without connecting."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from clusterforge.errors import ClusterforgeError
from clusterforge.remote.ssh import ssh_setup

PLAN = {"nodes": [{"name": "n1", "mgmt_ip": "10.1.0.11"}, {"name": "n2", "mgmt_ip": "10.1.0.12"}]}


def _effective(config: Path, host: str) -> dict[str, str]:
    out = subprocess.run(["ssh", "-G", "-F", str(config), host], capture_output=True, text=True, check=True)
    return {k: v for k, _, v in (line.partition(" ") for line in out.stdout.splitlines())}


@pytest.fixture
def layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gen = tmp_path / "inventory" / "generated" / "c1"
    (gen / "group_vars").mkdir(parents=True)
    (gen / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"n1": {}, "n2": {}}}}))
    (gen / "group_vars" / "all.yml").write_text(yaml.safe_dump({"ansible_user": "root"}))
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLUSTERFORGE_SITE", raising=False)
    return gen


def test_generated_inventory_alone(layers: Path) -> None:
    ssh = ssh_setup(PLAN, layers, ["n1", "n2"])
    try:
        eff = _effective(ssh.config, "n1")
        assert (eff["hostname"], eff["user"], eff["port"]) == ("10.1.0.11", "root", "22")
        assert eff["stricthostkeychecking"] == "true" and eff["batchmode"] == "yes"
        assert eff["controlpath"].startswith(str(ssh.folder))
    finally:
        ssh.close()
    assert not ssh.folder.exists()


def test_site_layer_sets_user_port_key_and_jump_host(layers: Path) -> None:
    site = layers.parent.parent / "site" / "c1"
    (site / "group_vars").mkdir(parents=True)
    (site / "host_vars").mkdir()
    (site / "group_vars" / "all.yml").write_text(
        yaml.safe_dump(
            {
                "ansible_user": "ops",
                "ansible_ssh_private_key_file": "/keys/ops ed25519",
                "ansible_ssh_common_args": "-o ProxyJump=ops@bastion.example.net:2222 "
                "-o ServerAliveInterval=9",
            }
        )
    )
    (site / "host_vars" / "n2.yml").write_text(
        yaml.safe_dump({"ansible_port": 2200, "ansible_host": "gpu-2.oob"})
    )
    ssh = ssh_setup(PLAN, layers, ["n1", "n2"])
    try:
        one, two = _effective(ssh.config, "n1"), _effective(ssh.config, "n2")
    finally:
        ssh.close()
    assert one["user"] == "ops" and one["proxyjump"] == "ops@bastion.example.net:2222"
    assert one["identityfile"] == "/keys/ops ed25519" and one["serveraliveinterval"] == "9"
    assert (two["hostname"], two["port"], two["user"]) == ("gpu-2.oob", "2200", "ops")
    assert not (site / "hosts.yml").exists(), "nothing is written into the site layer"


def test_a_site_proxycommand_reaches_ssh_as_the_operator_wrote_it(layers: Path) -> None:
    """ssh_config takes ProxyCommand's whole rest of line as the command: quoting it (as other values
    with spaces are) would make ssh run a program named by the whole quoted line."""
    site = layers.parent.parent / "site" / "c1"
    (site / "host_vars").mkdir(parents=True)
    cmd = "ssh -i /keys/jump -o BatchMode=yes -W %h:%p root@10.1.0.11"
    (site / "host_vars" / "n2.yml").write_text(
        yaml.safe_dump({"ansible_ssh_common_args": f"-o StrictHostKeyChecking=yes -o 'ProxyCommand={cmd}'"})
    )
    ssh = ssh_setup(PLAN, layers, ["n1", "n2"])
    try:
        text = ssh.config.read_text()
        two = _effective(ssh.config, "n2")
    finally:
        ssh.close()
    assert f"  ProxyCommand {cmd}\n" in text
    assert two["proxycommand"] == cmd


def test_users_own_ssh_config_fills_what_the_inventory_leaves(layers: Path) -> None:
    home_cfg = Path.home() / ".ssh" / "config"
    home_cfg.write_text(
        "Host n1\n  Port 2022\n  ProxyJump jump.site\nHost *\n  StrictHostKeyChecking accept-new\n"
    )
    ssh = ssh_setup(PLAN, layers, ["n1"])
    try:
        eff = _effective(ssh.config, "n1")
    finally:
        ssh.close()
    assert (eff["port"], eff["proxyjump"], eff["user"]) == ("2022", "jump.site", "root")
    assert eff["stricthostkeychecking"] == "accept-new"  # the user's own choice; the default is yes


def test_a_value_with_a_line_break_is_refused(layers: Path) -> None:
    (layers / "group_vars" / "all.yml").write_text(yaml.safe_dump({"ansible_user": "root\nProxyCommand x"}))
    with pytest.raises(ClusterforgeError, match="line break"):
        ssh_setup(PLAN, layers, ["n1"])
