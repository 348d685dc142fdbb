"""hw/nvue_show.py on the real NVUE captures (SOURCES.md) and on malformed input."""

from __future__ import annotations

import ast
import json

import pytest

from clusterforge.hw import ParseError, nvue_show
from tests.conftest import REAL

APPLIED = "nvue-rest-root-applied-json__cl5.5.1-vx-default-qos-roce-off-workshop__excerpt1.txt"
IFACES = "nvue-rest-interface-pydict__swp-down-mtu9216-eth0-1g-nvconfigmanager__excerpt1.txt"


def test_applied_tree_of_a_vx_with_default_qos() -> None:
    a = nvue_show.parse_applied((REAL / APPLIED).read_text())
    assert a.version == "Cumulus Linux 5.5.1"
    q = a.qos
    assert (q.roce_enable, q.roce_mode, q.trust) == ("off", None, "l2")
    assert q.dscp == {} and q.pcp == {i: i for i in range(8)}
    assert q.pfc_priorities == () and q.pfc == {} and q.pfc_watchdog == {}
    assert q.ecn == {0: nvue_show.EcnClass("enable", "disable", 150000, 1500000, 100)}
    assert q.queue_map == {i: i for i in range(8)}
    assert q.scheduler[0] == {"mode": "dwrr", "bw-percent": 12}
    assert q.scheduler[7] == {"mode": "dwrr", "bw-percent": 13}
    assert a.interfaces is not None
    eth0, lo = a.interfaces
    assert (eth0.name, eth0.type, eth0.mtu, eth0.speed, eth0.speed_gbps, eth0.state) == (
        "eth0", "eth", 9216, "auto", None, "up",
    )  # fmt: skip
    assert (lo.type, lo.mtu, lo.state) == ("loopback", None, None)


def test_operational_interfaces_of_a_switch_without_cables() -> None:
    links = nvue_show.interfaces_from(ast.literal_eval((REAL / IFACES).read_text()))
    by = {i.name: i for i in links}
    assert list(by) == ["eth0", "swp1", "swp10"]
    assert (by["eth0"].mtu, by["eth0"].speed, by["eth0"].speed_gbps, by["eth0"].state) == (
        1500,
        "1G",
        1,
        "up",
    )
    assert (by["swp1"].mtu, by["swp1"].speed, by["swp1"].speed_gbps, by["swp1"].state) == (
        9216, None, None, "down",
    )  # fmt: skip
    # the same tree as JSON text (what `nv show interface -o json` prints) parses the same
    assert nvue_show.parse_interfaces(json.dumps(ast.literal_eval((REAL / IFACES).read_text()))) == links


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("[1, 2]", "expected a JSON object"),
        ('{"qos": {"roce": {"enable": "on"}', "not JSON"),
        ('{"interface": {}}', "no qos branch"),
        ('{"qos": {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": "3"}}}}}}', "integer"),
        (
            '{"qos": {"mapping": {"default-global": {"dscp": {"x": {"switch-priority": 3}}}}}}',
            "number as key",
        ),
        ('{"qos": {"pfc": {"default-global": {"switch-priority": ["3"]}}}}', "expected an object"),
        ('{"qos": {}, "interface": {"swp1": {"link": {"state": {"up": {}, "down": {}}}}}}', "one state"),
        ('{"qos": {}, "interface": {"swp1": {"link": {"mtu": true}}}}', "swp1.link.mtu"),
    ],
)
def test_malformed_applied_tree_raises(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        nvue_show.parse_applied(text)


def test_interface_tree_is_not_a_root_tree() -> None:
    with pytest.raises(ParseError, match="root tree"):
        nvue_show.parse_interfaces((REAL / APPLIED).read_text())


def test_applied_qos_as_rendered_is_read_back() -> None:
    """The keys clusterforge renders (`nv set qos ...`) parse into the typed fields."""
    qos = {
        "roce": {"enable": "on", "mode": "lossless"},
        "mapping": {"default-global": {"trust": "l3", "dscp": {"26": {"switch-priority": 3}}}},
        "pfc": {"default-global": {"switch-priority": {"3": {}}, "tx": "enable", "cable-length": 100}},
        "pfc-watchdog": {"polling-interval": 100, "robustness": 3},
    }
    q = nvue_show.parse_applied(json.dumps({"qos": qos})).qos
    assert (q.roce_enable, q.roce_mode, q.trust, q.dscp) == ("on", "lossless", "l3", {26: 3})
    assert q.pfc_priorities == (3,) and q.pfc == {"tx": "enable", "cable-length": 100}
    assert q.pfc_watchdog == {"polling-interval": 100, "robustness": 3}
