"""The check helper fails closed: timeout, missing tool, unparseable output and an unreachable node are
`error` (CheckError), a wrong value is `fail` (CheckFailed with expected/found/fix), a right one passes.
Commands really run (testinfra's local backend, or ssh to a closed port)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import testinfra

from clusterforge.certify.checks import (
    CheckError,
    CheckFailed,
    Fix,
    Probe,
    Unreachable,
    expect_equal,
    expect_none_bad,
    measure,
    read_many_cmd,
    wrap,
)
from clusterforge.hw import ParseError


@pytest.fixture
def probe() -> Probe:
    return Probe(testinfra.get_host("local://"), "local", timeout=5)


def test_pass_returns_stdout(probe: Probe) -> None:
    assert probe.run("echo hello").strip() == "hello"
    assert probe.log[-1].rc == 0 and probe.log[-1].stdout.strip() == "hello"


def test_timeout_is_error_not_hang(probe: Probe) -> None:
    start = time.monotonic()
    with pytest.raises(CheckError, match="hung: no result within 1 s"):
        probe.run("sleep 30", timeout=1)
    assert time.monotonic() - start < 6


def test_missing_tool_is_error(probe: Probe) -> None:
    with pytest.raises(CheckError, match="not installed or not on PATH"):
        probe.run("no-such-tool-cf --version")


def test_not_executable_is_error(probe: Probe, tmp_path: Any) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o644)
    with pytest.raises(CheckError, match="not executable"):
        probe.run(str(tool))


def test_unexpected_exit_is_error(probe: Probe) -> None:
    with pytest.raises(CheckError, match="exited 3: boom"):
        probe.run("echo boom >&2; exit 3")
    assert probe.run("exit 3", ok=(0, 3)) == ""


def test_unparseable_is_error(probe: Probe) -> None:
    def parser(text: str) -> int:
        raise ParseError("tool", f"unrecognised {text.strip()!r}")

    with pytest.raises(CheckError, match="not recognised: tool: unrecognised 'garbage'"):
        probe.parse("echo garbage", parser)


def test_outputs_are_shared_between_checks_unless_told_not_to(tmp_path: Any) -> None:
    count = tmp_path / "runs"
    cmd = f"echo x >> {count}; wc -l < {count}"
    shared = Probe(testinfra.get_host("local://"), "local", timeout=5)
    assert shared.run(cmd).strip() == shared.run(cmd).strip() == "1"  # the second read is the first's output
    assert shared.log[-1].cached
    alone = Probe(testinfra.get_host("local://"), "local", timeout=5, share=False)
    assert [alone.run(cmd).strip() for _ in range(2)] == ["2", "3"]  # --cf-no-batch: each check runs it
    assert not alone.log[-1].cached


@pytest.mark.parametrize("share", [True, False], ids=["shared", "unshared"])
def test_errors_are_cached_so_a_hung_tool_costs_one_timeout(share: bool) -> None:
    probe = Probe(testinfra.get_host("local://"), "local", timeout=5, share=share)
    with pytest.raises(CheckError):
        probe.run("sleep 30", timeout=1)
    start = time.monotonic()
    with pytest.raises(CheckError, match="hung"):
        probe.run("sleep 29", timeout=1)  # the same tool: not run again, with outputs shared or not
    assert time.monotonic() - start < 0.5
    assert probe.log[-1].cached


def test_unreachable_is_error_and_short_circuits(tmp_path: Any) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host *\n  BatchMode yes\n  StrictHostKeyChecking yes\n  UserKnownHostsFile /dev/null\n"
        "  ConnectTimeout 3\n  ControlMaster no\n"
    )
    p = Probe(testinfra.get_host("ssh://root@127.0.0.1:1", ssh_config=str(cfg), controlpersist=0), "n1", 5)
    with pytest.raises(Unreachable, match="n1 unreachable over SSH"):
        p.run("true")
    with pytest.raises(Unreachable):  # no second connection attempt
        p.run("echo other")
    assert len([c for c in p.log if c.error]) == 1


def test_read_many(probe: Probe, tmp_path: Any) -> None:
    for i in range(3):
        (tmp_path / f"f{i}").write_text(f"v{i}\nsecond line\n")
    (tmp_path / "empty").write_text("")
    got = probe.read_many(str(tmp_path), "f*")
    assert got == {f"{tmp_path}/f{i}": f"v{i}" for i in range(3)}
    assert probe.read_many(str(tmp_path), "nothing*") == {}  # a measured absence, judged by the caller
    (tmp_path / "g9").symlink_to(tmp_path / "gone")  # matches but cannot be read: the command fails
    with pytest.raises(CheckError, match="g9: No such file"):
        probe.read_many(str(tmp_path), "g*")


def test_read_many_uncached_reads_now(probe: Probe, tmp_path: Any) -> None:
    """`cache=False`: a fresh read, neither the prefetched batch's result nor an earlier one (the two
    readings of a rate a window apart)."""
    (tmp_path / "c").write_text("1\n")
    probe.prefetch([read_many_cmd(str(tmp_path), "c")])
    (tmp_path / "c").write_text("2\n")
    assert probe.read_many(str(tmp_path), "c", cache=False) == {f"{tmp_path}/c": "2"}
    (tmp_path / "c").write_text("3\n")
    assert probe.read_many(str(tmp_path), "c", cache=False) == {f"{tmp_path}/c": "3"}
    assert probe.read_many(str(tmp_path), "c") == {f"{tmp_path}/c": "1"}  # cached: the prefetched one


def test_fail_message_names_expected_found_fix() -> None:
    fix = Fix("os_tuning", "governor").render("roce-01")
    with pytest.raises(CheckFailed) as exc:
        expect_equal("scaling_governor", "performance", "powersave", fix)
    msg = str(exc.value)
    assert "expected performance; found powersave" in msg
    assert "clusterforge provision --tags governor --limit roce-01` (role os_tuning)" in msg
    expect_equal("same", 1, 1, fix)  # passes silently


def test_expect_none_bad_lists_a_few_then_counts() -> None:
    with pytest.raises(CheckFailed, match=r"cpu0=C6, cpu1=C6 \(\+3 more\)"):
        expect_none_bad("states", {f"cpu{i}": "C6" for i in range(5)}, "disabled", "fix", limit=2)
    expect_none_bad("states", {}, "disabled", "fix")


def test_wrap_has_remote_timeout_and_kill() -> None:
    assert wrap("nvidia-smi -q", 30).startswith("LC_ALL=C timeout -k 2 30 sh -c 'nvidia-smi -q'; ")


def test_remote_exit_255_is_not_unreachable(probe: Probe) -> None:
    with pytest.raises(CheckError, match="exited 255: Failed to get IB devices list") as exc:
        probe.run("echo 'Failed to get IB devices list' >&2; exit 255")
    assert not isinstance(exc.value, Unreachable)


class TestMeasure:
    def make(self, values: list[float | Exception]) -> Any:
        it = iter(values)

        def once() -> tuple[float, dict[str, Any]]:
            v = next(it)
            if isinstance(v, Exception):
                raise v
            return v, {"v": v}

        return once

    def test_pass_on_first_at_threshold_records_every_attempt(self, probe: Probe) -> None:
        value = measure(probe, "bw", 3, 100.0, "GB/s", self.make([90.0, 101.0, 50.0]), "fix")
        assert value == 101.0
        assert [(a.n, a.value, a.passed) for a in probe.attempts] == [(1, 90.0, False), (2, 101.0, True)]

    def test_all_below_fails_with_every_value(self, probe: Probe) -> None:
        with pytest.raises(
            CheckFailed,
            match=r"expected >= 100 GB/s in one of 3 attempts; found 90.0, 80.0, "
            r"70.0 GB/s",
        ):
            measure(probe, "bw", 3, 100.0, "GB/s", self.make([90.0, 80.0, 70.0]), "fix")
        assert len(probe.attempts) == 3

    def test_all_errors_is_error(self, probe: Probe) -> None:
        with pytest.raises(CheckError, match="no attempt produced a measurement"):
            measure(probe, "bw", 2, 100.0, "GB/s", self.make([CheckError("hung"), CheckError("hung")]), "fix")

    def test_error_then_pass(self, probe: Probe) -> None:
        assert measure(probe, "bw", 3, 100.0, "GB/s", self.make([CheckError("x"), 120.0]), "fix") == 120.0
        assert probe.attempts[0].error == "x" and probe.attempts[1].passed

    def test_evidence_is_taken_once(self, probe: Probe) -> None:
        measure(probe, "bw", 1, 1.0, "GB/s", self.make([2.0]), "fix")
        probe.note("k", "v")
        ev = probe.take_evidence()
        assert ev["attempts"][0]["value"] == 2.0 and ev["notes"] == {"k": "v"}
        assert probe.take_evidence() == {"commands": []}


def test_a_tool_that_hung_is_not_run_again(probe: Probe, tmp_path: Any) -> None:
    tool = tmp_path / "slowtool"
    tool.write_text("#!/bin/sh\nsleep 30\n")
    tool.chmod(0o755)
    with pytest.raises(CheckError, match="hung"):
        probe.run(f"{tool} -q", timeout=1)
    start = time.monotonic()
    with pytest.raises(CheckError, match=r"hung earlier .* not run again"):
        probe.run(f"{tool} topo -m", timeout=1)
    assert time.monotonic() - start < 0.5


def test_prefetch_one_round_trip_serves_later_runs(probe: Probe) -> None:
    cmds = [
        "echo hello",
        "printf 'a\\nb'; echo err >&2; exit 3",
        "no-such-tool-cf",
        "printf 'é\\n@@CF@@ 9 9 9 9\\n'",
        "exit 255",
    ]
    calls: list[str] = []
    real = probe._transport

    def counting(remote: str, budget: float) -> tuple[int, bytes, bytes]:
        calls.append(remote)
        return real(remote, budget)

    probe._transport = counting  # type: ignore[method-assign]
    assert probe.prefetch(cmds) == len(cmds)
    assert len(calls) == 1
    assert probe.run("echo hello") == "hello\n"
    assert probe.run(cmds[1], ok=(3,)) == "a\nb"
    assert probe.run(cmds[3]) == "é\n@@CF@@ 9 9 9 9\n"  # output that looks like a marker is data
    with pytest.raises(CheckError, match="not installed"):
        probe.run("no-such-tool-cf")
    with pytest.raises(CheckError, match="exited 255") as exc:
        probe.run("exit 255")
    assert not isinstance(exc.value, Unreachable)
    assert len(calls) == 1  # nothing ran again
    assert probe.log[0].batched and probe.log[0].stdout == "hello\n"  # output kept as evidence on first use


def test_prefetch_of_a_hung_tool_marks_it_hung(probe: Probe) -> None:
    probe.timeout = 1
    probe.prefetch(["sleep 30", "echo after"])
    assert probe.run("echo after") == "after\n"
    with pytest.raises(CheckError, match="hung"):
        probe.run("sleep 30")
    with pytest.raises(CheckError, match="hung earlier"):
        probe.run("sleep 5")


def test_prefetch_failure_falls_back_to_single_commands(tmp_path: Any) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  BatchMode yes\n  UserKnownHostsFile /dev/null\n  ConnectTimeout 3\n")
    p = Probe(testinfra.get_host("ssh://root@127.0.0.1:1", ssh_config=str(cfg), controlpersist=0), "n1", 5)
    assert p.prefetch(["echo a"]) == 0
    with pytest.raises(Unreachable):
        p.run("echo a")


def test_a_tool_that_hangs_in_the_batch_is_skipped_there(probe: Probe, tmp_path: Any) -> None:
    tool = tmp_path / "hangs"
    tool.write_text("#!/bin/sh\nsleep 30\n")
    tool.chmod(0o755)
    probe.timeout = 1
    start = time.monotonic()
    probe.prefetch([f"{tool} -q", "echo between", f"{tool} topo -m", f"{tool} nvlink -s"])
    assert time.monotonic() - start < 6  # one timeout, not three
    assert probe.run("echo between") == "between\n"
    with pytest.raises(CheckError, match="hung: no result within 1 s"):
        probe.run(f"{tool} -q")
    with pytest.raises(CheckError, match="hung earlier"):
        probe.run(f"{tool} topo -m")
