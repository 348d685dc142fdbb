"""validators/test_link_counters.py: two readings of every port's sysfs counters a window apart, judged as
rates per rail. Fake nodes answer the batched reads (the clock and the wait are replaced, nothing sleeps);
the RoCE counter set is the real mlx5 `hw_counters/` listing
(hw-counters-ls__mlx5-bond0-hw_counters-dir-listing-cnnote__2.txt), and the last tests feed the check from
the lab simulator with its `link-errors` fault. On RoCE each reading also runs ONE `ethtool -S` of every rail
netdev; its answers are built from the real mlx5 captures (ethtool-S__cx4-lx-25g-mlx5-*) plus the lossless
priority's PFC lines, and the simulator's `pause-storm` fault feeds the last test."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed, ToolMissing, Unreachable
from clusterforge.plan import Plan, build_plan
from clusterforge.plan.expect import NodeExpect, nodes_of
from clusterforge.remote.commands import ETHTOOL_END, ethtool_stats_cmd, read_many_cmd
from clusterforge.spec import load_spec_text
from tests.conftest import LAB_SPEC
from tests.unit.sim.conftest import SimNode

from .conftest import FakeNode, real, validator

lc = validator("link_counters")
IB_CMD = read_many_cmd(lc.SYSFS, lc.PATTERNS["counters"])
ROCE_CMD = read_many_cmd(lc.SYSFS, lc.PATTERNS["hw_counters"])
IB_NAMES = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_xmit_discards"]
IB_NAMES += ["excessive_buffer_overrun_errors", "port_xmit_data", "VL15_dropped"]
ETH_REAL = real("ethtool-S__cx4-lx-25g-mlx5-discards-grep-prio-discards-cnnote__excerpt2.txt") + real(
    "ethtool-S__cx4-lx-25g-mlx5-pause-pci-grep-tx-global-pause-cnnote__excerpt1.txt"
)
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


def eth_cmd(node: NodeExpect) -> str:
    return ethtool_stats_cmd([r.netdev for r in node.rails])


def eth_text(prios: tuple[int, ...] = (3,), **values: int) -> str:
    """An mlx5 `ethtool -S` of a rail with PFC on ``prios``: the real captures' lines (values as captured,
    or as given) and the priorities' PFC counters."""
    lines = [ln.split(":")[0].strip() for ln in ETH_REAL.splitlines() if ln.strip()]
    pfc = (("rx", "pause"), ("rx", "pause_duration"), ("tx", "pause"))
    lines += [f"{d}_prio{p}_{c}" for p in prios for d, c in pfc]
    real_values = {n: int(v) for n, _, v in (ln.strip().partition(": ") for ln in ETH_REAL.splitlines())}
    return "NIC statistics:\n" + "".join(f"     {n}: {values.get(n, real_values.get(n, 0))}\n" for n in lines)


def eth_answer(node: NodeExpect, *readings: dict[str, tuple[int, str]]) -> Callable[[], tuple[int, str]]:
    """The one `ethtool -S` command's answer per reading: netdev -> (exit code, output), as the loop prints
    it; a netdev not given answers a quiet port."""
    it = iter(readings)

    def answer() -> tuple[int, str]:
        got = next(it)
        return 0, "".join(
            f"{text}\n{ETHTOOL_END}{rc}\n"
            for r in node.rails
            for rc, text in [got.get(r.netdev, (0, eth_text()))]
        )

    return answer


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
    """As on the lent H100 machine (no HCA): grep names its unexpanded glob; the check does not wait out the
    window for a second reading of nothing (it waited 5 s there)."""
    nomatch = (2, "", f"grep: {lc.SYSFS}/*/ports/*/counters/*: No such file or directory\n")
    probe = FakeNode({IB_CMD: nomatch})
    with pytest.raises(CheckError, match=r"rail 0: no counters readable in /sys/class/infiniband/"):
        lc.test_rates(ib_node, probe, 0)
    assert clock == [100.0] and probe.asked.count(IB_CMD) == 1


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
    quiet = eth_answer(roce_node, {}, {})
    probe = FakeNode({ROCE_CMD: readings(roce_node, "hw_counters", base, cnp), eth_cmd(roce_node): quiet})
    lc.test_rates(roce_node, probe, 1)  # congestion notifications: measured, reported, not judged
    notes = probe.take_evidence()["notes"]
    assert notes["reported_per_s"] == {"np_cnp_sent": 1000.0, "rp_cnp_handled": 10.0}
    prio = roce_node.rail_desired(1)["qos"]["lossless_priority"]
    eth = ["rx_discards_phy", f"rx_prio{prio}_discards", "tx_pause_storm_error_events"]
    eth += [f"rx_prio{prio}_pause", f"tx_prio{prio}_pause"]
    assert all(notes["counters"][n]["verdict"] == "pass" for n in eth)  # ethtool -S: read and judged
    assert "not_read" not in notes
    assert IB_CMD not in probe.asked

    loss = dict(base, **{f"{r.hca}/1/out_of_sequence": 12})
    probe = FakeNode(
        {
            ROCE_CMD: readings(roce_node, "hw_counters", base, loss),
            eth_cmd(roce_node): eth_answer(roce_node, {}, {}),
        }
    )
    with pytest.raises(CheckFailed, match=r"out_of_sequence \+12 in 5.0 s = 2.4/s > limit 0/s") as exc:
        lc.test_rates(roce_node, probe, 1)
    assert "reseat or replace the rail's cable" in str(exc.value) and "PFC" not in exc.value.fix


def test_pfc_storm_on_the_lossless_priority_fails_the_rail(roce_node: NodeExpect, clock: list[float]) -> None:
    """rx_prio3_pause rising at 200000/s (limit 100000/s) fails rail 1 with expected, found and fix; the
    other rails pass on the same sample; the node costs one `ethtool -S` per reading."""
    base = flat(roce_node, MLX5_HW, value=0)
    r = roce_node.rail(1)
    storm = {r.netdev: (0, eth_text(rx_prio3_pause=1_000_000, rx_pause_ctrl_phy=1_000_000))}
    cmd = eth_cmd(roce_node)
    probe = FakeNode(
        {ROCE_CMD: readings(roce_node, "hw_counters", base, base), cmd: eth_answer(roce_node, {}, storm)}
    )
    with pytest.raises(CheckFailed) as exc:
        lc.test_rates(roce_node, probe, 1)
    e = exc.value
    assert e.what == f"rail 1 {r.hca} port 1 link counters over 5.0 s"
    assert e.expected == "no counter rising faster than its limit"
    assert e.found == (
        "rx_prio3_pause +1000000 in 5.0 s = 2e+05/s > limit 100000/s "
        "(project default PFC-storm limit on the lossless priority)"
    )
    assert e.fix.startswith("find what floods the rail with PFC pause frames") and "roce_qos" in e.fix
    assert "reseat" not in e.fix
    for other in (0, 2, 3):
        lc.test_rates(roce_node, probe, other)
    assert probe.asked.count(cmd) == 2 and probe.asked.count(ROCE_CMD) == 2 and len(probe.asked) == 4
    assert "'" + r.netdev + "'" in cmd or f" {r.netdev} " in cmd  # the plan's netdevs, quoted words


def test_pause_on_another_priority_is_not_judged(roce_node: NodeExpect, clock: list[float]) -> None:
    base = flat(roce_node, MLX5_HW, value=0)
    r = roce_node.rail(0)
    other = {r.netdev: (0, eth_text(prios=(3, 5), rx_prio5_pause=9_000_000))}
    first = {r.netdev: (0, eth_text(prios=(3, 5)))}
    probe = FakeNode(
        {
            ROCE_CMD: readings(roce_node, "hw_counters", base, base),
            eth_cmd(roce_node): eth_answer(roce_node, first, other),
        }
    )
    lc.test_rates(roce_node, probe, 0)
    counted = probe.take_evidence()["notes"]["counters"]
    assert "rx_prio5_pause" not in counted and counted["rx_prio3_pause"]["verdict"] == "pass"


def test_ethtool_missing_is_an_error_naming_the_role(roce_node: NodeExpect, clock: list[float]) -> None:
    base = flat(roce_node, MLX5_HW, value=0)
    gone = {r.netdev: (127, "sh: 1: ethtool: not found\n") for r in roce_node.rails}
    cmd = eth_cmd(roce_node)
    probe = FakeNode(
        {ROCE_CMD: readings(roce_node, "hw_counters", base, base), cmd: eth_answer(roce_node, gone)}
    )
    for r in roce_node.rails:
        with pytest.raises(ToolMissing) as exc:
            lc.test_rates(roce_node, probe, r.index)
        msg = str(exc.value)
        assert not isinstance(exc.value, CheckFailed)
        assert msg.startswith(
            "cannot certify: ethtool missing (install: role os_tuning, tag os_tuning_packages)"
        )
        assert "rx_prio3_pause" in msg and "sh: 1: ethtool: not found" in msg
    assert probe.asked.count(cmd) == 1  # not asked again for the second reading
    # a measured failure on the same rail still fails (the unread counters are named)
    loss = dict(base, **{f"{roce_node.rail(0).hca}/1/out_of_sequence": 5})
    probe = FakeNode(
        {ROCE_CMD: readings(roce_node, "hw_counters", base, loss), cmd: eth_answer(roce_node, gone)}
    )
    with pytest.raises(
        CheckFailed, match=r"also not judged: .*not read: ethtool not installed \(role os_tuning"
    ):
        lc.test_rates(roce_node, probe, 0)


def test_unreadable_netdev_or_pfc_counter_missing_is_an_error(
    roce_node: NodeExpect, clock: list[float]
) -> None:
    base = flat(roce_node, MLX5_HW, value=0)
    r0, r1 = roce_node.rail(0), roce_node.rail(1)
    nodev = (96, "Cannot get stats strings information: No such device\n")
    no_pfc = (0, "NIC statistics:\n" + ETH_REAL)  # PFC off: mlx5 shows the global pause counters only
    answers = {r0.netdev: nodev, r1.netdev: no_pfc}
    probe = FakeNode(
        {
            ROCE_CMD: readings(roce_node, "hw_counters", base, base),
            eth_cmd(roce_node): eth_answer(roce_node, answers, answers),
        }
    )
    with pytest.raises(CheckError) as exc:
        lc.test_rates(roce_node, probe, 0)
    assert not isinstance(exc.value, (CheckFailed, ToolMissing))
    assert f"`ethtool -S {r0.netdev}` exited 96: Cannot get stats strings information: No such device" in str(
        exc.value
    )
    with pytest.raises(
        CheckError, match=rf"rx_prio3_pause missing from `ethtool -S {r1.netdev}` \(mlx5 shows"
    ):
        lc.test_rates(roce_node, probe, 1)
    lc.test_rates(roce_node, probe, 2)


LAB_CERT = "  join_tiers: [quick]\n"


LAB_PRIO = "lossless_priority: 3,"


@cache
def spec_nodes(link_counters: str, prio: int = 3) -> dict[str, NodeExpect]:
    """The nodes of the lab plan compiled with ``link_counters`` (YAML, indented under certification) in
    the spec, RoCE's lossless priority ``prio``: the desired state the validator reads, as `clusterforge
    plan` writes it."""
    text = LAB_SPEC.read_text(encoding="utf-8")
    assert text.count(LAB_CERT) == 1 and text.count(LAB_PRIO) == 1
    text = text.replace(LAB_CERT, LAB_CERT + "  link_counters:\n" + link_counters)
    text = text.replace(LAB_PRIO, f"lossless_priority: {prio},")
    return nodes_of(build_plan(load_spec_text(text, "lab.yaml")).doc)


def test_sku_window_from_the_desired_state(clock: list[float]) -> None:
    """The spec's per-SKU window, compiled into the node's desired state, is the wait between readings."""
    node = spec_nodes("    window_s: 3\n    skus:\n      h100-sxm-8x400g-ib: {window_s: 2}\n")["ib-01"]
    assert node.desired["link_counters"]["window_s"] == 2.0
    base = flat(node, IB_NAMES)
    lc.test_rates(node, FakeNode({IB_CMD: readings(node, "counters", base, base)}), 0)
    assert clock[0] == 102.0
    roce = spec_nodes("    window_s: 3\n    skus:\n      h100-sxm-8x400g-ib: {window_s: 2}\n")["roce-01"]
    assert lc.window(roce) == 3.0  # the site-wide window where the SKU sets none


def test_site_limit_from_the_spec_judges_the_rail(ib_node: NodeExpect, clock: list[float]) -> None:
    """symbol_error rising 5/s fails on the policy's 0/s (test above); a site limit of 10/s in the spec lets
    it pass, and the SKU's own limit of 1/s, later in the merge, fails it again naming where it came from."""
    site = spec_nodes("    limits: {symbol_error: 10}\n")["ib-01"]
    r2 = site.rail(2)
    base = flat(site, IB_NAMES)
    later = dict(base, **{f"{r2.hca}/{r2.port}/symbol_error": 3 + 25})  # +25 in 5 s = 5/s
    lc.test_rates(site, FakeNode({IB_CMD: readings(site, "counters", base, later)}), 2)
    assert lc.rail_limits(site, 2)["symbol_error"] == lc.counters.Limit(
        10.0, "spec certification.link_counters.limits", "counters"
    )
    with pytest.raises(CheckFailed, match=r"symbol_error \+25 in 5.0 s = 5/s > limit 0/s \(project default"):
        lc.test_rates(ib_node, FakeNode({IB_CMD: readings(ib_node, "counters", base, later)}), 2)
    sku = spec_nodes("    limits: {symbol_error: 10}\n    skus:\n      h100-sxm-8x400g-ib:\n"
                     "        limits: {symbol_error: 1}\n")["ib-01"]  # fmt: skip
    with pytest.raises(CheckFailed) as exc:
        lc.test_rates(sku, FakeNode({IB_CMD: readings(sku, "counters", base, later)}), 2)
    assert exc.value.found == (
        "symbol_error +25 in 5.0 s = 5/s > limit 1/s "
        "(spec certification.link_counters.skus.h100-sxm-8x400g-ib.limits)"
    )


def test_spec_limit_of_a_per_priority_counter_at_the_rails_priority(clock: list[float]) -> None:
    """A spec limit written with {prio} is judged on the rail's lossless priority (5 here, the spec's
    tuning.roce); null leaves a counter measured and reported, not judged."""
    nodes = spec_nodes('    limits:\n      "rx_prio{prio}_pause": 10\n      out_of_sequence: null\n', prio=5)
    node = nodes["roce-01"]
    assert node.desired["link_counters"]["limits"]["rx_prio{prio}_pause"]["max_per_s"] == 10.0
    base = flat(node, MLX5_HW, value=0)
    r = node.rail(0)
    quiet = {n.netdev: (0, eth_text(prios=(5,))) for n in node.rails}
    pause = dict(quiet, **{r.netdev: (0, eth_text(prios=(5,), rx_prio5_pause=100))})  # 20/s, policy: 100000
    loss = dict(base, **{f"{r.hca}/1/out_of_sequence": 12})
    probe = FakeNode(
        {
            ROCE_CMD: readings(node, "hw_counters", base, loss),
            eth_cmd(node): eth_answer(node, quiet, pause),
        }
    )
    with pytest.raises(CheckFailed) as exc:
        lc.test_rates(node, probe, 0)
    assert exc.value.found == (
        "rx_prio5_pause +100 in 5.0 s = 20/s > limit 10/s (spec certification.link_counters.limits)"
    )
    notes = probe.take_evidence()["notes"]
    assert notes["reported_per_s"]["out_of_sequence"] == 2.4  # null: measured, not judged


def test_plan_without_the_desired_section_is_an_error_not_a_pass(ib_node: NodeExpect) -> None:
    """A plan.json compiled before the limits were in the desired state: an error naming the fix, nothing
    read from the node, never the packaged policy's limits."""
    old = {k: v for k, v in ib_node.desired_state.items() if k != "link_counters"}
    probe = FakeNode({})
    for node in (replace(ib_node, desired_state=old), replace(ib_node, desired_state={})):
        with pytest.raises(CheckError) as exc:
            lc.test_rates(node, probe, 0)
        assert not isinstance(exc.value, CheckFailed)
        assert "re-run `clusterforge plan`" in str(exc.value)
    assert probe.asked == []
    broken = dict(ib_node.desired_state, link_counters={"window_s": 0, "limits": {}})
    with pytest.raises(CheckError, match="window_s of ib-01 is 0, not a positive number"):
        lc.window(replace(ib_node, desired_state=broken))


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


def sim_eth_answer(sim: SimNode, node: NodeExpect) -> Callable[[], tuple[int, str]]:
    """The one `ethtool -S` command as the simulated node answers it (the loop's layout, each netdev's
    output from the simulator's ethtool)."""

    def answer() -> tuple[int, str]:
        out = ""
        for r in node.rails:
            rc, text, err = sim.run("ethtool", "-S", r.netdev)
            out += f"{text}{err}\n{ETHTOOL_END}{rc}\n"
        return 0, out

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
    pfc = ",".join("1" if p == 3 else "0" for p in range(8))
    for r in node.rails if kind == "roce" else []:  # what the rdma role applies (roce_qos)
        sim.ok("mlnx_qos", "-i", r.netdev, "--pfc", pfc)
    eth = {eth_cmd(node): sim_eth_answer(sim, node)} if kind == "roce" else {}
    probe = FakeNode({cmd: sim_answer(sim, d), **eth})
    with pytest.raises(CheckFailed, match=rf"rail 2 .* {counter} \+15 in 5.0 s = 3/s > limit 0/s"):
        lc.test_rates(node, probe, 2)
    for r in (0, 1, 3):
        lc.test_rates(node, probe, r)
    sim.clear("link-errors")
    probe = FakeNode({cmd: sim_answer(sim, d), **eth})
    for r in node.rails:
        lc.test_rates(node, probe, r.index)


def test_pause_storm_fault_on_the_simulator(
    tmp_path: Path, lab_plan: Plan, plan_nodes: dict[str, NodeExpect], clock: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The lab's case: pause-storm on one RoCE rail fails that rail naming rx_prio3_pause; cleared, every
    rail passes (the counter stays where it got, it no longer rises)."""
    from clusterforge.lab.sim import pausestorm

    node = plan_nodes["roce-01"]
    monkeypatch.setattr(pausestorm, "_now", lambda: clock[0])
    sim = SimNode(tmp_path / "roce-01", "h100-sxm-8x400g-roce", node="roce-01", plan=lab_plan.doc)
    for r in node.rails:
        sim.ok("mlnx_qos", "-i", r.netdev, "--pfc", "0,0,0,1,0,0,0,0")
    sysfs = {ROCE_CMD: sim_answer(sim, "hw_counters")}
    sim.fault("pause-storm", rail=1)
    probe = FakeNode({**sysfs, eth_cmd(node): sim_eth_answer(sim, node)})
    with pytest.raises(
        CheckFailed, match=r"rail 1 .* rx_prio3_pause \+2500000 in 5.0 s = 5e\+05/s > limit 100000/s"
    ):
        lc.test_rates(node, probe, 1)
    for r in (0, 2, 3):
        lc.test_rates(node, probe, r)
    sim.clear("pause-storm")
    probe = FakeNode({**sysfs, eth_cmd(node): sim_eth_answer(sim, node)})
    for r in node.rails:
        lc.test_rates(node, probe, r.index)


def test_ethtool_output_that_does_not_split_per_netdev_is_an_error() -> None:
    out = f"NIC statistics:\n     rx_discards_phy: 0\n\n{ETHTOOL_END}0\n"
    assert lc.split_ethtool(out, 1) == [(0, "NIC statistics:\n     rx_discards_phy: 0\n\n")]
    with pytest.raises(CheckError, match=r"`ethtool -S` of 2 rail netdevs: 1 results came back"):
        lc.split_ethtool(out, 2)
    with pytest.raises(ValueError):
        ethtool_stats_cmd([])
