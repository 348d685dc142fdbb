"""A node that answers SSH while systemd is still starting its units is not measured: sshd comes up before
the units that re-apply non-persistent settings at boot (RoCE QoS), which would read as wrong. Certification
waits for the boot to finish (bounded) and a node still starting is `error` and incomplete, never `fail`.
Tested with a stand-in `ssh` on PATH that answers as the node's systemctl would."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from clusterforge.certify.runner import booting_result
from clusterforge.flows.admit import drain_reason
from clusterforge.remote.ssh import SshSetup, booted


def _fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> Path:
    """`ssh` that records its argv and prints `answer` as the remote command's output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv"
    script = bin_dir / "ssh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\nprintf "{answer}"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def _setup(tmp_path: Path) -> SshSetup:
    return SshSetup(tmp_path, tmp_path / "ssh_config", ["n1"])


@pytest.mark.parametrize(
    ("answer", "up", "state"),
    [
        ("running\\n", True, "running"),
        ("degraded\\n", True, "degraded"),  # a failed unit is the checks' business, not a boot in progress
        ("starting\\n", False, "starting"),
        ("initializing\\n", False, "initializing"),
        ("stopping\\n", False, "stopping"),
        ("maintenance\\n", False, "maintenance"),
        ("offline\\n", True, "offline"),  # systemd is not init: nothing to wait for
        ("", True, "unknown"),  # no systemctl
    ],
)
def test_boot_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, up: bool, state: str
) -> None:
    log = _fake_ssh(tmp_path, monkeypatch, answer)
    assert booted(_setup(tmp_path), "n1", wait_s=7) == (up, state)
    argv = log.read_text().splitlines()
    assert argv[:3] == ["-F", str(tmp_path / "ssh_config"), "n1"]
    assert argv[3].startswith("timeout 7 systemctl is-system-running --wait")


def test_a_booting_node_is_an_incomplete_error_and_drained_as_such() -> None:
    res = booting_result("n1", "starting")
    assert res.verdict == "error" and res.status_word == "incomplete"
    assert [(c.check_id, c.status, c.found) for c in res.checks] == [("node.booted", "error", "starting")]
    assert not res.failed
    assert "node.booted" in drain_reason(res)
