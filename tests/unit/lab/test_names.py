"""Naming and MAC rules of the lab (pure)."""

from __future__ import annotations

import pytest

from clusterforge.lab import names


def test_node_mac_matches_the_plan_rule() -> None:
    assert names.lab_mac(0, 0) == "02:cf:00:00:00:00"
    assert names.lab_mac(1 + 7, 300) == "02:cf:00:08:01:2c"


def test_host_side_mac_differs_from_node_side() -> None:
    assert names.lab_mac(3, 5, host_side=True) == "02:cf:01:03:00:05"
    assert names.lab_mac(3, 5) != names.lab_mac(3, 5, host_side=True)


@pytest.mark.parametrize(("kind", "ordinal"), [(-1, 0), (256, 0), (0, 65536), (0, -1)])
def test_mac_out_of_range(kind: int, ordinal: int) -> None:
    with pytest.raises(ValueError):
        names.lab_mac(kind, ordinal)


def test_macs_are_unique_over_a_large_cluster() -> None:
    macs = {names.lab_mac(k, o, side) for k in range(9) for o in range(2000) for side in (False, True)}
    assert len(macs) == 9 * 2000 * 2


def test_host_links_fit_ifnamsiz_and_are_unique() -> None:
    links = {names.host_link("lab", f"node-{i:04d}", r) for i in range(500) for r in [None, *range(8)]}
    assert len(links) == 500 * 9
    assert all(len(n) <= names.IFNAMSIZ and names.is_lab_link(n) for n in links)


def test_rail_bridges() -> None:
    assert names.rail_bridge("roce0", 7) == "cfbr-roce0-7"
    long = names.rail_bridge("a-very-long-fabric-name", 12)
    assert len(long) <= names.IFNAMSIZ and long.startswith("cfbr-") and long.endswith("-12")
    assert names.is_lab_bridge(long) and names.is_lab_bridge("cfbr0")
    assert not names.is_lab_link(long) and not names.is_lab_bridge("eth0")


def test_netns_and_machine_id() -> None:
    assert names.netns_name("lab", "roce-01") == "cf-lab-roce-01"
    mid = names.machine_id("lab", "roce-01")
    assert len(mid) == 32 and mid == names.machine_id("lab", "roce-01") != names.machine_id("lab", "roce-02")
