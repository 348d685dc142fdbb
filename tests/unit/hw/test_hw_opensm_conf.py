"""hw/opensm_conf.py: OpenSM's opensm.conf, partitions.conf, qos-policy.conf and GUID files.

Real capture: opensm-conf__opensm3.3.23-debian12-create-config-defaults-local__1.txt (SOURCES.md): the
option table with defaults that Debian 12's opensm 3.3.23 writes with `opensm -c FILE`. The other inputs
are written here from the readers' rules (linux-rdma/opensm fa74b98c: osm_subnet.c clean_val /
osm_subn_parse_conf_file, osm_prtn_config.c, osm_qos_parser_l.l, complib/cl_nodenamemap.c).
"""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError, opensm_conf

from .conftest import read_real

CAPTURE = "opensm-conf__opensm3.3.23-debian12-create-config-defaults-local__1.txt"


def test_every_option_of_the_real_capture() -> None:
    text = read_real(CAPTURE)
    conf = opensm_conf.parse(text)
    # an option line is one that does not start with "#" and is not blank (opensm -c writes no other kind)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert [f"{e.key} {e.value}" for e in conf.entries] == lines
    assert len(conf.options) == len(lines) > 150 and conf.repeated == ()
    o = conf.options
    assert (o["lmc"], o["sm_priority"], o["routing_engine"], o["qos"]) == ("0", "0", "(null)", "FALSE")
    assert o["routing_engine"] == opensm_conf.NULL and o["root_guid_file"] == opensm_conf.NULL
    assert o["partition_config_file"] == "/etc/opensm/partitions.conf"
    assert o["qos_policy_file"] == "/etc/opensm/qos-policy.conf"
    assert o["qos_ca_high_limit"] == "-1" and o["qos_sl2vl"] == "(null)"
    assert o["cc_ca_cong_setting_ccti_timer"] == "0 0"  # the value is the rest of the line
    assert conf.entries[0] == opensm_conf.OpensmOption("guid", "0x0000000000000000", 5)


def test_options_as_opensm_reads_them() -> None:
    conf = opensm_conf.parse(
        "# head\n"
        "lmc 1\n"
        "\tsm_priority   7   # trailing comment\n"
        'node_name_map_name "/etc/opensm/node names"\n'
        "log_prefix 'x'\n"
        "qos\n"
        "lmc 0\r\n"
    )
    assert conf.options == {
        "lmc": "0",  # repeated: the last line wins
        "sm_priority": "7",
        "node_name_map_name": "/etc/opensm/node names",  # one pair of enclosing quotes dropped
        "log_prefix": "x",
        "qos": "",
    }
    assert conf.repeated == ("lmc",) and [e.line_no for e in conf.entries] == [2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("# only\n# comments\n", "no option line"),
        ("Default=0x7fff : ALL=full ;\n", "not an OpenSM option name"),  # a partitions.conf
        ("lmc 0\nqos-levels\n", "not an OpenSM option name"),  # a qos-policy.conf
    ],
)
def test_what_is_not_an_opensm_conf(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        opensm_conf.parse(text)


def test_partition_rules() -> None:
    p = opensm_conf.parse_partitions(
        "# tenants\n"
        "Default=0x7FFF, ipoib ,defmember=full:ALL=full,\n"
        "   ALL_SWITCHES=full , SELF=full;  # the default\n"
        "tenant_a = 0x0a01 , ipoib : 0x0002c90300001234=full ; storage : ALL=limited ;\n"
        "half written : ALL\n"
    )
    assert [(r.name, r.pkey) for r in p.rules] == [
        ("Default", "0x7fff"),
        ("tenant_a", "0x0a01"),
        ("storage", None),
    ]
    assert p.rules[0].key == "Default=0x7FFF,ipoib,defmember=full:ALL=full,ALL_SWITCHES=full,SELF=full"
    assert p.rules[0].text == "Default=0x7FFF, ipoib ,defmember=full:ALL=full, ALL_SWITCHES=full , SELF=full"
    assert p.unterminated == "half written : ALL"
    with pytest.raises(ParseError, match="no rule ending"):
        opensm_conf.parse_partitions("Default=0x7fff : ALL=full\n")
    with pytest.raises(ParseError, match="empty"):
        opensm_conf.parse_partitions("\n")


def test_qos_policy_lines() -> None:
    got = opensm_conf.qos_policy_lines(
        "# c\nqos-ulps\n\tdefault   :  0 # compute\n\n    ipoib : 1\nend-qos-ulps\n"
    )
    assert got == ("qos-ulps", "default : 0", "ipoib : 1", "end-qos-ulps")
    with pytest.raises(ParseError):
        opensm_conf.qos_policy_lines("# nothing\n\n")


def test_guid_files() -> None:
    text = "# roots\n0x0002C90300001234\n\n  0x0002c90300005678 spine-1 # name\n17\n010\n"
    assert opensm_conf.parse_guids(text) == (0x0002C90300001234, 0x0002C90300005678, 17, 8)
    assert opensm_conf.parse_guids("") == ()
    for bad in ("spine-1\n", "0x12g\n", "09\n"):  # strtoull stops before the end of the token
        with pytest.raises(ParseError, match="not a GUID"):
            opensm_conf.parse_guids(bad)
