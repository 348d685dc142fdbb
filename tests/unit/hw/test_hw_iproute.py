"""hw/iproute.py: `ip -j route show [default]` on real captures (tests/fixtures/real/ip-j-route*: the
development VM's own table, scratch network namespaces shaped like a lab node, and one public sample), then
the malformed outputs the parser must refuse."""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError, iproute

from .conftest import read_real

HOST_DEFAULT = "ip-j-route-default__bookworm-vm-eth0-iproute2-6.1-local__1.txt"
HOST_ALL = "ip-j-route__bookworm-vm-eth0-default-plus-kernel-link-local__1.txt"
LAB = "ip-j-route-default__netns-veth-mgmt0-via-10.244.0.1-lab-shape-local__2.txt"
EMPTY = "ip-j-route-default__netns-no-default-empty-array-local__3.txt"
TWO = "ip-j-route-default__netns-two-defaults-static-metric100-linkdown-metric200-local__4.txt"
ECMP = "ip-j-route-default__netns-ecmp-nexthops-mgmt0-eth9-local__5.txt"
NO_DEFAULT_ALL = "ip-j-route__netns-veth-mgmt0-kernel-link-only-no-default-local__2.txt"
LAPTOP = "ip-j-route-default__laptop-wlo1-dhcp-prefsrc-metric600-porthole__6.txt"


def test_the_vms_default_route() -> None:
    (r,) = iproute.parse(read_real(HOST_DEFAULT))
    assert (r.dst, r.type, r.metric, r.protocol, r.flags) == ("default", "unicast", 0, None, ())
    assert r.hops == (iproute.NextHop("192.0.2.1", "eth0", None, ()),)
    assert r.is_default and not r.linkdown


def test_a_whole_table_keeps_its_order_and_the_link_route() -> None:
    routes = iproute.parse(read_real(HOST_ALL))
    assert [r.dst for r in routes] == ["default", "192.0.2.0/24"]
    link = routes[1]
    assert (link.protocol, link.scope, link.prefsrc) == ("kernel", "link", "192.0.2.2")
    assert link.hops == (iproute.NextHop(None, "eth0", None, ()),)  # on-link: no gateway
    assert iproute.default_routes(routes) == routes[:1]


def test_the_lab_nodes_default_route() -> None:
    (r,) = iproute.default_routes(iproute.parse(read_real(LAB)))
    assert [(h.gateway, h.dev) for h in r.hops] == [("10.244.0.1", "mgmt0")]


def test_no_default_route_is_an_empty_list_not_an_error() -> None:
    assert iproute.parse(read_real(EMPTY)) == ()
    routes = iproute.parse(read_real(NO_DEFAULT_ALL))
    assert [r.dst for r in routes] == ["10.244.0.0/24"] and iproute.default_routes(routes) == ()


def test_two_defaults_lowest_metric_first_and_linkdown() -> None:
    first, second = iproute.default_routes(iproute.parse(read_real(TWO)))
    assert (first.metric, first.protocol, first.hops[0].dev, first.linkdown) == (
        100,
        "static",
        "mgmt0",
        False,
    )
    assert (second.metric, second.hops[0].gateway, second.linkdown) == (200, "192.168.7.1", True)


def test_two_defaults_listed_in_the_other_order_still_pick_the_lower_metric() -> None:
    import json

    rows = json.loads(read_real(TWO))
    first, _ = iproute.default_routes(iproute.parse(json.dumps(rows[::-1])))
    assert first.metric == 100 and first.hops[0].dev == "mgmt0"


def test_ecmp_hops_come_from_nexthops() -> None:
    (r,) = iproute.parse(read_real(ECMP))
    assert [(h.gateway, h.dev, h.weight) for h in r.hops] == [
        ("10.244.0.1", "mgmt0", 1),
        ("192.168.7.1", "eth9", 1),
    ]


def test_public_dhcp_default_route() -> None:
    (r,) = iproute.parse(read_real(LAPTOP))
    assert (r.protocol, r.prefsrc, r.metric, r.hops[0].dev) == ("dhcp", "10.10.10.119", 600, "wlo1")


def test_a_blackhole_default_has_no_hop_and_is_not_a_default_route_to_use() -> None:
    # a non-unicast route as ip prints it: `type` set, no dev (ip/iproute.c prints type only when not unicast)
    routes = iproute.parse('[{"type":"blackhole","dst":"default","flags":[]}]')
    assert routes[0].hops == () and iproute.default_routes(routes) == ()


def test_a_gateway_of_another_family_is_read_from_via() -> None:
    text = read_real(LAB).replace('"gateway":"10.244.0.1"', '"via":{"family":"inet6","host":"fe80::1"}')
    assert iproute.parse(text)[0].hops[0].gateway == "fe80::1"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("default via 192.0.2.1 dev eth0\n", "not JSON"),
        ('{"dst":"default"}', "JSON array"),
        ('[{"gateway":"192.0.2.1","dev":"eth0"}]', "'dst'"),
        ('[{"dst":"default","gateway":"192.0.2.1"}]', "neither 'dev' nor 'nexthops'"),
        ('[{"dst":"default","dev":"eth0","metric":"100"}]', "'metric'"),
        ('[{"dst":"default","dev":"eth0","flags":"linkdown"}]', "'flags'"),
        ('[{"dst":"default","nexthops":[]}]', "'nexthops'"),
        ('[{"dst":"default","nexthops":[{"gateway":"192.0.2.1"}]}]', "'dev'"),
    ],
)
def test_malformed_output_is_refused(text: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        iproute.parse(text)
