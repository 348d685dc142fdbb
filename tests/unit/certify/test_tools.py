"""What counts as a missing tool or daemon, the names it gives, and the role/tag map against playbooks/."""

from __future__ import annotations

import re

import pytest

from clusterforge.remote import tools
from tests.conftest import PLAYBOOKS


@pytest.mark.parametrize(
    ("command", "rc", "err", "tool"),
    [
        ("nvbandwidth -t x", 127, "sh: 1: nvbandwidth: not found\n", "nvbandwidth"),  # dash
        (
            "all_reduce_perf -g 8",
            127,
            "bash: line 1: all_reduce_perf: command not found\n",
            "all_reduce_perf",
        ),
        ("mlnx_qos -i eth0", 127, "sh: mlnx_qos: not found\n", "mlnx_qos"),  # busybox
        ("set -- -d mlx5_0; e=$(mktemp); ib_write_bw", 127, "sh: 1: ib_write_bw: not found\n", "ib_write_bw"),
        (
            "nvbandwidth",
            127,
            "timeout: failed to run command 'nvbandwidth': No such file or directory",
            "nvbandwidth",
        ),
        ("ibstat", 127, "", "ibstat"),  # no message: the first program
        (
            "srun -N2 all_reduce_perf",
            2,
            "slurmstepd: error: execve(): all_reduce_perf: No such file or directory",
            "all_reduce_perf",
        ),
        (  # CPython 3.12's line, captured on the lent H100 machine (no health check installed there)
            "python3 /usr/local/sbin/clusterforge-healthcheck --config /etc/clusterforge/healthcheck.json",
            2,
            "python3: can't open file '/usr/local/sbin/clusterforge-healthcheck': [Errno 2] No such file or "
            "directory\n",
            "clusterforge-healthcheck",
        ),
        (
            "/usr/local/sbin/clusterforge-acs --status",
            127,
            "sh: 1: /usr/local/sbin/clusterforge-acs: not found\n",
            "clusterforge-acs",
        ),
        ("ofed_info -s", 127, "sh: 1: ofed_info: not found\n", "ofed_info"),
        (
            "dcgmi diag -r 2 -j",
            1,
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.",
            "nv-hostengine",
        ),
    ],
)
def test_missing(command: str, rc: int, err: str, tool: str) -> None:
    found = tools.missing(command, rc, "", err)
    assert found is not None and found.name == tool
    assert found.role, "every tool a check runs that a role installs names that role"


@pytest.mark.parametrize(
    ("command", "rc", "err"),
    [
        ("nvbandwidth -t x", 1, "CUDA error: not found\n"),  # ran, failed: not missing
        ("ib_write_bw -d mlx5_0", 1, " Couldn't connect to 127.0.0.1:18515\n"),
        ("nvbandwidth", 0, ""),
        ("ibstat", 124, ""),  # hung: an error, but the tool is there
    ],
)
def test_not_missing(command: str, rc: int, err: str) -> None:
    assert tools.missing(command, rc, "", err) is None


def test_message_and_extraction() -> None:
    text = tools.cannot_certify(tools.TOOLS["nvbandwidth"])
    assert text == "cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks)"
    msgs = [f"{text} on n1; `nvbandwidth` is not installed", "other", f"{text} on n1"]
    assert tools.missing_tools(msgs) == [text]
    unknown = tools.cannot_certify(tools.lookup("dpkg-query"))
    assert unknown.startswith("cannot certify: dpkg-query missing (no clusterforge role")


def _tags(role: str) -> set[str]:
    text = "\n".join(p.read_text() for p in (PLAYBOOKS / "roles" / role / "tasks").glob("*.yml"))
    text += (PLAYBOOKS / "site.yml").read_text()
    return {t.strip() for m in re.finditer(r"tags:\s*\[([^\]]*)\]", text) for t in m.group(1).split(",")}


@pytest.mark.parametrize("tool", sorted(tools.TOOLS))
def test_role_and_tag_exist(tool: str) -> None:
    t = tools.TOOLS[tool]
    assert (PLAYBOOKS / "roles" / t.role).is_dir(), (
        f"{tool}: the error message names role {t.role}, which is missing"
    )
    assert t.tag in _tags(t.role), f"{tool}: tag {t.tag} not used by role {t.role}"
