"""Link-health counters as rates on the provisioned lab: the simulator's `link-errors` fault makes one rail's
counter rise (InfiniBand symbol_error, RoCE out_of_sequence); `link_counters.rates` fails that rail alone,
naming the counter and the rail, and every other node and rail passes; once the fault is cleared (the
repair) it passes again.

Cheap on purpose: only validators/test_link_counters.py runs (the full tier's other checks are minutes of
benchmarks), through the runner's own pieces (its ssh_config, pytest argv, results stream), so no record,
certificate or admission is touched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.certify.single import run_validator

pytestmark = pytest.mark.lab

# node -> (rail, counter the fault makes rise on that node's fabric)
FAULTED = {"ib-01": (2, "symbol_error"), "roce-01": (5, "out_of_sequence")}


def run_rates(certify_lab: Any, nodes: list[str], out: Path) -> dict[str, dict[str, Any]]:
    """node -> check_id -> result of validators/test_link_counters.py alone on each node, in parallel."""
    return run_validator(certify_lab, nodes, out, "test_link_counters.py")


def test_rising_counter_fails_its_rail_and_passes_once_cleared(certify_lab: Any, tmp_path: Path) -> None:
    from clusterforge.lab.sim.faults import apply

    nodes = certify_lab.nodes
    for node, (rail, _) in FAULTED.items():
        apply(certify_lab.lab, node, "link-errors", rail=rail, rate=5)
    try:
        got = run_rates(certify_lab, nodes, tmp_path / "faulted")
    finally:
        for node in FAULTED:
            apply(certify_lab.lab, node, "link-errors", clear=True)
    for node in nodes:
        bad = {cid: c.status for cid, c in got[node].items() if c.status != "pass"}
        if node not in FAULTED:
            assert not bad, f"{node} has no fault but: {bad}"
            continue
        rail, counter = FAULTED[node]
        cid = f"link_counters.rates[rail{rail}]"
        assert bad == {cid: "fail"}, (node, bad)
        msg = got[node][cid].message
        assert f"rail {rail} " in msg and re.search(
            rf"{counter} \+\d+ in [\d.]+ s = [\d.]+/s > limit 0/s", msg
        )
        assert "Fix: reseat or replace the rail's cable or optic" in msg, msg
    # cleared: the counter is back and flat, every rail of the faulted nodes passes
    again = run_rates(certify_lab, list(FAULTED), tmp_path / "cleared")
    for node in FAULTED:
        bad = {cid: c.status for cid, c in again[node].items() if c.status != "pass"}
        assert not bad, (node, bad)


def test_pause_storm_on_the_lossless_priority_fails_its_rail(certify_lab: Any, tmp_path: Path) -> None:
    """A PFC storm (`ethtool -S` rx_prio3_pause rising far above the policy's limit) on one RoCE rail fails
    that rail with the lossless-path fix; the other RoCE node and rails pass; once it stops, all pass."""
    from clusterforge.lab.sim.faults import apply

    roce = [n for n in certify_lab.nodes if n.startswith("roce-")]
    apply(certify_lab.lab, "roce-01", "pause-storm", rail=3)
    try:
        got = run_rates(certify_lab, roce, tmp_path / "storm")
    finally:
        apply(certify_lab.lab, "roce-01", "pause-storm", clear=True)
    bad = {n: {cid: c.status for cid, c in got[n].items() if c.status != "pass"} for n in roce}
    assert bad == {"roce-01": {"link_counters.rates[rail3]": "fail"}, "roce-02": {}}, bad
    msg = got["roce-01"]["link_counters.rates[rail3]"].message
    assert re.search(r"rx_prio3_pause \+\d+ in [\d.]+ s = [\d.e+]+/s > limit 100000/s", msg), msg
    assert "PFC pause frames" in msg and "reseat" not in msg, msg
    again = run_rates(certify_lab, ["roce-01"], tmp_path / "stopped")
    assert not {cid: c.status for cid, c in again["roce-01"].items() if c.status != "pass"}
