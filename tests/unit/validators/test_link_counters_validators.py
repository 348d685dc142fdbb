"""validators/test_link_counters.py: two readings of every port's sysfs counters a window apart, judged as
rates per rail. Fake nodes answer the batched reads (the clock and the wait are replaced, nothing sleeps);
the RoCE counter set is the real mlx5 `hw_counters/` listing
(hw-counters-ls__mlx5-bond0-hw_counters-dir-listing-cnnote__2.txt), and the last tests feed the check from
the lab simulator with its `link-errors` fault."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, Unreachable
from clusterforge.plan import Plan
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import read_many_cmd
from tests.unit.sim.conftest import SimNode

from .conftest import FakeNode, real, validator

lc = validator("link_counters")
IB_CMD = read_many_cmd(lc.SYSFS, lc.PATTERNS["counters"])
ROCE_CMD = read_many_cmd(lc.SYSFS, lc.PATTERNS["hw_counters"])
IB_NAMES = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_xmit_discards"]
IB_NAMES += ["excessive_buffer_overrun_errors", "port_xmit_data", "VL15_dropped"]
MLX5_HW = [ln.split()[-1] for ln in real("hw-counters-ls__mlx5-bond0-hw_counters-dir-listing-cnnote__2.txt")
           .splitlines()[1:]]  # fmt: skip


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The validator's clock; its wait advances it (no real sleep)."""
    now = [100.0]
    monkeypatch.setattr(lc, "_clock", lambda: now[0])
    monkeypatch.setattr(lc, "_sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


Files = dict[str, int | str]  # "hca/port/counter" -> value


def grep_out(node: NodeExpect, d: str, files: Files) -> str:
    return "".join(
        f"{lc.SYSFS}/{hca}/ports/{port}/{d}/{name}:{value}\n"
        for key, value in files.items()
        for hca, port, name in [key.split("/")]
    )


def readings(node: NodeExpect, d: str, *states: Files) -> Callable[[], tuple[int, str]]:
    it: Iterator[Files] = iter(states)
    return lambda: (0, grep_out(node, d, next(it)))


def flat(node: NodeExpect, names: list[str], value: int = 3) -> Files:
    return {f"{r.hca}/{r.port}/{n}": value for r in node.rails for n in names}


def test_flat_counters_pass_every_rail_in_one_window(ib_node: NodeExpect, clock: list[float]) -> None:
    base = flat(ib_node, IB_NAMES)
    probe = FakeNode({IB_CMD: readings(ib_node, "counters", base, dict(base, **{"x/1/port_xmit_data": 9}))})
    for r in ib_node.rails:
        lc.test_rates(ib_node, probe, r.index)
    assert probe.asked.count(IB_CMD) == 2  # one sample per node, shared by its rails
    assert clock[0] == 105.0  # the policy's 5 s window, waited once
    notes = probe.take_evidence()["notes"]
    assert notes["window_s"] == 5.0 and notes["counters"]["symbol_error"]["verdict"] == "pass"


def test_rising_counter_fails_naming_counter_rate_limit_and_far_end(
    ib_node: NodeExpect, clock: list[float]
) -> None:
    base = flat(ib_node, IB_NAMES)
    r2 = ib_node.rail(2)
    later = dict(base, **{f"{r2.hca}/{r2.port}/symbol_error": 3 + 25})
    probe = FakeNode({IB_CMD: readings(ib_node, "counters", base, later)})
    with pytest.raises(CheckFailed) as exc:
        lc.test_rates(ib_node, probe, 2)
    msg = str(exc.value)
    assert f"rail 2 {r2.hca} port {r2.port} link counters over 5.0 s" in msg
    assert "symbol_error +25 in 5.0 s = 5/s > limit 0/s (project default; IB PortCounters" in msg
    assert "Fix: reseat or replace the rail's cable or optic" in msg and "check the switch port" in msg
    wire = next(w for w in ib_node.rail_neighbours if int(w["rail"]) == 2)
    assert f"(far end: {wire['switch']} port {wire['switch_port']})" in msg
    for r in (0, 1, 3):
        lc.test_rates(ib_node, probe, r)  # the other rails pass on the same sample


def test_backwards_counter_is_an_error(ib_node: NodeExpect, clock: list[float]) -> None:
    base = flat(ib_node, IB_NAMES, value=40)
    r = ib_node.rail(0)
    probe = FakeNode(
        {IB_CMD: readings(ib_node, "counters", base, dict(base, **{f"{r.hca}/1/link_downed": 0}))}
    )
    with pytest.raises(CheckError, match=r"cannot judge link_downed went backwards \(reset or wrapped\)"):
        lc.test_rates(ib_node, probe, 0)


def test_unreadable_counters_are_an_error_for_every_rail_without_a_second_window(
    ib_node: NodeExpect, clock: list[float]
) -> None:
    denied = (2, "", f"grep: {lc.SYSFS}/mlx5_0/ports/1/counters/symbol_error: Permission denied\n")
    probe = FakeNode({IB_CMD: denied})
    for r in (0, 1):
        with pytest.raises(CheckError, match="Permission denied") as exc:
            lc.test_rates(ib_node, probe, r)
        assert not isinstance(exc.value, CheckFailed)
    assert probe.asked == [IB_CMD] and clock[0] == 100.0


def test_missing_or_non_numeric_counter_is_an_error(ib_node: NodeExpect, clock: list[float]) -> None:
    names = [n for n in IB_NAMES if n != "port_rcv_errors"]
    base = flat(ib_node, names)
    r = ib_node.rail(1)
    odd = dict(base, **{f"{r.hca}/1/symbol_error": "N/A"})
    probe = FakeNode({IB_CMD: readings(ib_node, "counters", odd, odd)})
    with pytest.raises(CheckError) as exc:
        lc.test_rates(ib_node, probe, 1)
    assert "symbol_error unreadable (not an integer)" in str(exc.value)
    assert f"port_rcv_errors missing from {lc.SYSFS}/{r.hca}/ports/1" in str(exc.value)
    probe = FakeNode({IB_CMD: readings(ib_node, "counters", base, odd)})  # unreadable in one reading
    with pytest.raises(CheckError) as exc:
        lc.test_rates(ib_node, probe, 1)
    assert str(exc.value).count("symbol_error") == 1 and "symbol_error unreadable" in str(exc.value)


def test_no_counter_files_is_an_error(ib_node: NodeExpect, clock: list[float]) -> None:
    nomatch = (2, "", f"grep: {lc.SYSFS}/*/ports/*/counters/*: No such file or directory\n")
    with pytest.raises(CheckError, match=r"rail 0: no counters readable in /sys/class/infiniband/"):
        lc.test_rates(ib_node, FakeNode({IB_CMD: nomatch}), 0)


def test_unreachable_node_stays_unreachable(ib_node: NodeExpect, clock: list[float]) -> None:
    class Gone(FakeNode):
        def _exec(self, command: str, timeout: int) -> tuple[int, str, str]:
            raise Unreachable("n1 unreachable over SSH: timed out")

    probe = Gone({})
    for r in (0, 1):
        with pytest.raises(Unreachable):
            lc.test_rates(ib_node, probe, r)


def test_roce_reads_hw_counters_judges_loss_and_reports_cnps(
    roce_node: NodeExpect, clock: list[float]
) -> None:
    base = flat(roce_node, MLX5_HW, value=0)
    r = roce_node.rail(1)
    cnp = dict(base, **{f"{r.hca}/1/np_cnp_sent": 5000, f"{r.hca}/1/rp_cnp_handled": 50})
    probe = FakeNode({ROCE_CMD: readings(roce_node, "hw_counters", base, cnp)})
    lc.test_rates(roce_node, probe, 1)  # congestion notifications: measured, reported, not judged
    notes = probe.take_evidence()["notes"]
    assert notes["reported_per_s"] == {"np_cnp_sent": 1000.0, "rp_cnp_handled": 10.0}
    prio = roce_node.rail_desired(1)["qos"]["lossless_priority"]
    assert f"rx_prio{prio}_pause" in notes["not_read"]["counters"]  # ethtool -S: not read by this check
    assert IB_CMD not in probe.asked

    loss = dict(base, **{f"{r.hca}/1/out_of_sequence": 12})
    with pytest.raises(CheckFailed, match=r"out_of_sequence \+12 in 5.0 s = 2.4/s > limit 0/s"):
        lc.test_rates(roce_node, FakeNode({ROCE_CMD: readings(roce_node, "hw_counters", base, loss)}), 1)


def test_sku_window_from_the_policy(
    ib_node: NodeExpect, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.fabric import counters

    policy = counters.default_policy()
    policy["skus"] = {ib_node.sku_name: {"window_s": 2}}
    monkeypatch.setattr(counters, "default_policy", lambda: policy)
    base = flat(ib_node, IB_NAMES)
    lc.test_rates(ib_node, FakeNode({IB_CMD: readings(ib_node, "counters", base, base)}), 0)
    assert clock[0] == 102.0


# -- fed by the lab simulator -----------------------------------------------------------------------------
def sim_answer(sim: SimNode, d: str) -> Callable[[], tuple[int, str]]:
    """The batched read as the node answers it now: kerneld's tick first (it rewrites a rising counter),
    then grep over the simulated sysfs, paths shown as the node sees them."""
    from clusterforge.lab.sim import daemons

    def answer() -> tuple[int, str]:
        with sim.env():
            daemons.kerneld(["--once"])
        root = str(sim.root)
        files = sorted(Path(root, lc.SYSFS.lstrip("/")).glob(lc.PATTERNS[d]))
        r = subprocess.run(["grep", "-H", "-m1", "", *map(str, files)], capture_output=True, text=True)
        return r.returncode, re.sub(rf"^{re.escape(root)}", "", r.stdout, flags=re.M)

    return answer


@pytest.mark.parametrize("kind", ["ib", "roce"])
def test_link_errors_fault_on_the_simulator(
    kind: str, tmp_path: Path, lab_plan: Plan, plan_nodes: dict[str, NodeExpect], clock: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from clusterforge.lab.sim import linkerr

    name, sku, d, counter = {
        "ib": ("ib-01", "h100-sxm-8x400g-ib", "counters", "symbol_error"),
        "roce": ("roce-01", "h100-sxm-8x400g-roce", "hw_counters", "out_of_sequence"),
    }[kind]
    node = plan_nodes[name]
    monkeypatch.setattr(linkerr, "_now", lambda: clock[0])  # the simulator's clock is the validator's
    sim = SimNode(tmp_path / name, sku, node=name, plan=lab_plan.doc)
    cmd = read_many_cmd(lc.SYSFS, lc.PATTERNS[d])
    sim.fault("link-errors", rail=2, rate=3)
    probe = FakeNode({cmd: sim_answer(sim, d)})
    with pytest.raises(CheckFailed, match=rf"rail 2 .* {counter} \+15 in 5.0 s = 3/s > limit 0/s"):
        lc.test_rates(node, probe, 2)
    for r in (0, 1, 3):
        lc.test_rates(node, probe, r)
    sim.clear("link-errors")
    probe = FakeNode({cmd: sim_answer(sim, d)})
    for r in node.rails:
        lc.test_rates(node, probe, r.index)
