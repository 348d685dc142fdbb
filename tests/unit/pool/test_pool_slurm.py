"""Slurm pool manager: parsing real `scontrol show node` output, command lines, reasons, ownership, timeouts.

The samples in data/ are real outputs; data/SOURCES.md says where each comes from (the project lab's
slurmctld 22.05.8, a private 22.05.8 controller on the development host, and the multi-line Slurm
20.11.8 sample published in GeertvanGeest/cluster-docs docs/documentation/SLURM_usage/status_monitoring.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from clusterforge.pool.base import (
    HOLD_REASON,
    MAX_REASON_LEN,
    PoolError,
    ResumeRefused,
    reason_for_checks,
    sanitize_reason,
)
from clusterforge.pool.slurm import CommandResult, SlurmPool, node_state, parse_nodes, run_command, state_of

DATA = Path(__file__).parent / "data"


def sample(name: str) -> str:
    return (DATA / name).read_text()


# --- parsing real output -----------------------------------------------------------------------------


def test_parses_lab_output_one_line_per_node() -> None:
    nodes = parse_nodes(sample("scontrol-show-node-o__slurm-22.05.8-lab-idle.txt"))
    assert list(nodes) == ["ib-01", "roce-01"]
    ib = nodes["ib-01"]
    assert ib["State"] == "IDLE" and ib["Partitions"] == "ib" and ib["NodeAddr"] == "10.244.0.13"
    assert ib["OS"] == "Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0"  # a value with spaces
    assert ib["CfgTRES"] == "cpu=2,mem=1M,billing=2" and ib["AllocTRES"] == ""  # `=` inside, and empty
    assert ib["ActiveFeatures"] == "pool_ib,sku_h100_sxm_8x400g_ib,fabric_ib0"
    s = node_state("ib-01", ib)
    assert (s.state, s.reason, s.raw) == ("idle", "", "IDLE")
    assert s.labels == {"partitions": "ib", "features": "pool_ib,sku_h100_sxm_8x400g_ib,fabric_ib0"}


def test_parses_drained_nodes_with_reasons() -> None:
    nodes = parse_nodes(sample("scontrol-show-node-o__slurm-22.05.8-drained-local.txt"))
    vm, ghost = node_state("vm", nodes["vm"]), node_state("ghost1", nodes["ghost1"])
    assert (vm.state, vm.raw, vm.reason) == ("drained", "IDLE+DRAIN", HOLD_REASON)
    assert vm.ours and vm.held
    assert nodes["vm"]["ReasonUser"] == "root" and nodes["vm"]["ReasonTime"] == "2026-11-22T00:29:37"
    # someone else's reason holding `opt=value` stays whole
    assert (ghost.state, ghost.reason, ghost.ours) == ("drained", "NHC: check_hw failed opt=value", False)
    assert "opt" not in nodes["ghost1"] and nodes["ghost1"]["BootTime"] == "None"


def test_parses_allocated_drain_as_draining() -> None:
    nodes = parse_nodes(sample("scontrol-show-node-o__slurm-22.05.8-allocated-drain-local.txt"))
    s = node_state("vm", nodes["vm"])
    assert (s.state, s.raw, s.reason) == ("draining", "ALLOCATED+DRAIN", HOLD_REASON)


def test_parses_published_multi_line_output() -> None:
    nodes = parse_nodes(sample("scontrol-show-node__slurm-20.11.8-allocated-geertvangeest.txt"))
    f = nodes["binfservas07"]
    assert f["State"] == "ALLOCATED" and f["CPUAlloc"] == "16" and f["Version"] == "20.11.8"
    assert f["OS"] == "Linux 3.10.0-1160.45.1.el7.x86_64 #1 SMP Wed Oct 13 17:20:51 UTC 2021"
    assert f["Comment"] == "(null)" and f["Partitions"] == "pall"
    assert node_state("binfservas07", f).state == "busy"


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("IDLE", "idle"),
        ("MIXED", "busy"),
        ("ALLOCATED", "busy"),
        ("IDLE+COMPLETING", "busy"),
        ("IDLE+DRAIN", "drained"),
        ("MIXED+DRAIN", "draining"),
        ("ALLOCATED+DRAIN", "draining"),
        ("IDLE+COMPLETING+DRAIN", "draining"),
        ("DOWN", "down"),
        ("DOWN*+DRAIN", "down"),
        ("IDLE*", "down"),
        ("IDLE+CLOUD", "idle"),
        ("IDLE~", "idle"),
        ("IDLE+RESERVED", "idle"),
        ("IDLE+MAINTENANCE", "idle"),
        ("UNKNOWN", "unknown"),
        ("UNKNOWN+DRAIN", "drained"),
        ("FUTURE", "down"),
        ("IDLE+INVALID_REG", "down"),
        ("RESV", "unknown"),
        ("SOMETHING_NEW+DRAIN", "drained"),
        ("", "unknown"),
        ("DRAINED", "drained"),
        ("DRAINING", "draining"),
    ],
)
def test_state_words(raw: str, state: str) -> None:
    assert state_of(raw)[0] == state


def test_state_flags() -> None:
    assert state_of("DOWN*+DRAIN")[1] == {"NOT_RESPONDING", "DRAIN"}
    assert "POWERED_DOWN" in state_of("IDLE~")[1]


# --- reasons -----------------------------------------------------------------------------------------


def test_sanitised_reasons() -> None:
    assert (
        sanitize_reason("failed \"gpu.count\"\nand 'nic'\t `x`") == "clusterforge: failed gpu.count and nic x"
    )
    assert sanitize_reason("clusterforge: a=b") == "clusterforge: a:b"
    assert sanitize_reason("ünïcode") == "clusterforge: ?n?code"
    assert sanitize_reason("") == "clusterforge: drained"
    long = sanitize_reason("x" * 1000)
    assert len(long) == MAX_REASON_LEN and long.endswith("...")
    for text in ['a"b', "a\nb", "a\rb", "a'b", "a\\b", "\x00"]:
        out = sanitize_reason(text)
        assert not set(out) & set("\"'\n\r\\\x00") and out.startswith("clusterforge: ")


def test_reason_for_many_failed_checks_stays_short() -> None:
    assert reason_for_checks(["b", "a", "a"]) == "clusterforge: failed a,b"
    ids = [f"gpu.check_{i:03d}" for i in range(50)]
    text = reason_for_checks(ids)
    assert len(text) <= MAX_REASON_LEN and text.endswith("more)") and "gpu.check_000" in text
    shown = text.removeprefix("clusterforge: failed ").split(" (+")[0].split(",")
    assert int(text.split("(+")[1].split(" ")[0]) == 50 - len(shown)
    assert reason_for_checks([]) == "clusterforge: not certified"


# --- commands ----------------------------------------------------------------------------------------


class FakeSlurm:
    """Answers scontrol like slurmctld would, from a node table; records argv, timeout and env."""

    def __init__(self, states: dict[str, tuple[str, str]]) -> None:
        self.states = dict(states)
        self.calls: list[tuple[list[str], float, Mapping[str, str] | None]] = []

    def show(self) -> str:
        lines = []
        for n, (state, reason) in self.states.items():
            r = f" Reason={reason} [root@2030-01-01T00:00:00]" if reason else ""
            lines.append(f"NodeName={n} Arch=x86_64 CPUTot=2 State={state} Partitions=gpu{r}")
        return "\n".join(lines) + "\n"

    def __call__(self, argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None) -> CommandResult:
        argv = list(argv)
        self.calls.append((argv, timeout_s, env))
        if argv[1:] == ["show", "node", "-o"]:
            return CommandResult(0, self.show(), "")
        if argv[1] == "update":
            node = argv[2].split("=", 1)[1]
            if node not in self.states:
                return CommandResult(1, "", f"slurm_update error: Invalid node name specified {node}")
            if argv[3] == "state=DRAIN":
                base = self.states[node][0].split("+")[0]
                self.states[node] = (f"{base}+DRAIN", argv[4].split("=", 1)[1])
            elif argv[3] == "state=RESUME":
                self.states[node] = ("IDLE", "")
            return CommandResult(0, "", "")
        return CommandResult(2, "", "bad command")

    def updates(self) -> list[list[str]]:
        return [c[0] for c in self.calls if c[0][1] == "update"]


def test_drain_and_resume_command_lines() -> None:
    fake = FakeSlurm({"ib-01": ("IDLE", ""), "ib-02": ("MIXED", "")})
    pool = SlurmPool(env={"SLURM_CONF": "/x/slurm.conf"}, timeout_s=7, runner=fake)
    assert pool.drain("ib-01", 'failed gpu.count\n"x"')
    assert pool.resume("ib-01")
    assert fake.updates() == [
        ["scontrol", "update", "nodename=ib-01", "state=DRAIN", "reason=clusterforge: failed gpu.count x"],
        ["scontrol", "update", "nodename=ib-01", "state=RESUME"],
    ]
    assert {c[1] for c in fake.calls} == {7} and {c[2]["SLURM_CONF"] for c in fake.calls if c[2]} == {
        "/x/slurm.conf"
    }
    assert pool.resume("ib-02") is False  # not drained: nothing to do
    assert pool.drain("ib-02", "failed x") and pool.status(["ib-02"])["ib-02"].state == "draining"


def test_foreign_drains_are_never_undone_without_force() -> None:
    fake = FakeSlurm({"n1": ("IDLE+DRAIN", "admin: PSU swap"), "n2": ("IDLE+DRAIN", HOLD_REASON)})
    pool = SlurmPool(runner=fake)
    with pytest.raises(ResumeRefused, match="drained by someone else"):
        pool.resume("n1")
    assert pool.drain("n1", "failed gpu.ecc") is False  # the admin's reason is kept
    with pytest.raises(ResumeRefused, match="held for review"):
        pool.admit("n2", {"node": "n2", "verdict": "pass"})
    assert fake.updates() == []
    assert pool.drain("n2", "failed y")  # our own hold can be re-drained with another reason
    assert pool.resume("n1", force=True)
    assert fake.states["n1"] == ("IDLE", "")


def test_unknown_nodes_and_failures() -> None:
    fake = FakeSlurm({"n1": ("IDLE", "")})
    pool = SlurmPool(runner=fake)
    assert pool.status(["n1", "zz"])["zz"].state == "unknown"
    with pytest.raises(PoolError, match="does not know"):
        pool.drain("zz", "x")
    with pytest.raises(PoolError, match="not 'n1'"):
        pool.admit("n1", {"node": "n2", "verdict": "pass"})
    with pytest.raises(PoolError, match="only pass admits"):
        pool.admit("n1", {"node": "n1", "verdict": "fail"})

    def broken(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None) -> CommandResult:
        return CommandResult(
            1, "", "slurm_load_node error: Unable to contact slurm controller (connect failure)"
        )

    with pytest.raises(PoolError, match="Unable to contact slurm controller"):
        SlurmPool(runner=broken).status()


def test_commands_time_out(tmp_path: Path) -> None:
    hang = tmp_path / "scontrol"
    hang.write_text("#!/bin/sh\nexec sleep 30\n")
    hang.chmod(0o755)
    pool = SlurmPool(scontrol=str(hang), timeout_s=0.3)
    with pytest.raises(PoolError, match="timed out after 0 s"):
        pool.status()
    with pytest.raises(PoolError, match="cannot run"):
        SlurmPool(scontrol=str(tmp_path / "missing")).status()


def test_run_command_passes_env() -> None:
    res = run_command(
        ["sh", "-c", "echo $SLURM_CONF"], 5, {"SLURM_CONF": "/etc/x.conf", "PATH": "/bin:/usr/bin"}
    )
    assert res == CommandResult(0, "/etc/x.conf\n", "")
