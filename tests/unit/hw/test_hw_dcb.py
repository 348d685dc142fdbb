"""hw/dcb.py: iproute2 ``dcb -j`` JSON.

Real capture: dcb-app-json__swp1-dscp-prio-cs1-cs2-netdev-idosch__1.txt (SOURCES.md). No real ``dcb -j pfc``
or ``dcb -j apptrust`` output was found in a public source: PFC_JSON / APPTRUST_JSON below are CONSTRUCTED
from iproute2's print code (dcb/dcb_pfc.c: pfc_cap, macsec_bypass as a JSON boolean, delay, prio_pfc as
eight booleans; dcb/dcb_apptrust.c: an ``order`` array of selector names) - see CONSTRUCTED in
test_hw_fixture_coverage.py.
"""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError, dcb

from .conftest import read_real

# CONSTRUCTED (iproute2 dcb_pfc.c): `dcb -j pfc show dev eth0` after `prio-pfc all:off 3:on`
PFC_JSON = (
    '{"pfc_cap":8,"macsec_bypass":false,"delay":0,'
    '"prio_pfc":[false,false,false,true,false,false,false,false]}\n'
)
# CONSTRUCTED (iproute2 dcb_apptrust.c): `dcb -j apptrust show dev eth0` after `order dscp pcp`
APPTRUST_JSON = '{"order":["dscp","pcp"]}\n'


def test_app_real_capture_with_the_separator_element() -> None:
    app = dcb.parse_app(read_real("dcb-app-json__swp1-dscp-prio-cs1-cs2-netdev-idosch__1.txt"))
    assert app.dscp_prio == ((8, 0), (16, 1))  # CS1:0 CS2:1, numeric in JSON; the " " element ignored
    assert app.prios_of_dscp(16) == (1,) and app.prios_of_dscp(26) == () and app.default_prio == ()


def test_app_before_iproute2_6_5_and_duplicates() -> None:
    app = dcb.parse_app('{"default_prio":[0],"dscp_prio":[[26,3],[48,6],[26,5]]}')
    assert app.prios_of_dscp(26) == (3, 5) and app.prios_of_dscp(48) == (6,) and app.default_prio == (0,)
    assert dcb.parse_app("{}").dscp_prio == ()  # an empty APP table


def test_pfc_constructed() -> None:
    pfc = dcb.parse_pfc(PFC_JSON)
    assert (pfc.pfc_cap, pfc.macsec_bypass, pfc.delay, pfc.priorities) == (8, False, 0, (3,))


def test_apptrust_constructed() -> None:
    assert dcb.parse_apptrust(APPTRUST_JSON) == ("dscp", "pcp")
    assert dcb.parse_apptrust('{"order":[]}') == ()


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        (dcb.parse_pfc, "pfc-cap 8 macsec-bypass off delay 0\nprio-pfc 0:off 1:off\n", "not JSON"),
        (dcb.parse_pfc, '{"prio_pfc":[true,false]}', "8 entries"),
        (dcb.parse_pfc, '{"prio_pfc":[1,0,0,0,0,0,0,0]}', "expected a boolean"),
        (dcb.parse_app, '{"dscp_prio":[[26]]}', "not \\[key, priority\\]"),
        (dcb.parse_app, '{"dscp_prio":[[26,9]]}', "priority: expected an integer 0..7"),
        (dcb.parse_app, "[]", "expected a JSON object"),
        (dcb.parse_apptrust, '{"order":["dscp","bogus"]}', "apptrust"),
        (dcb.parse_apptrust, "", "empty output"),
    ],
)
def test_malformed_output_is_a_parse_error(parser, text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parser(text)
