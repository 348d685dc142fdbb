"""The lldpd role rendered from the sample plan inventory: its drop-in carries the compiled desired state's
interfaces and settings as they are, and a node without RoCE rails or storage NICs gets nothing."""

from __future__ import annotations

import pytest

from .test_templates import ROCKY, render
from .test_values_are_data import render_fails


def test_lldpd_conf_from_the_desired_state() -> None:
    out = render("lldpd", templates={"conf": "templates/clusterforge.conf.j2"})["conf"]
    assert out.splitlines()[3:] == [
        "configure system hostname roce-01",
        "configure system interface pattern enp24s0np0,enp64s0np0",
        "configure lldp portidsubtype ifname",
        "configure lldp tx-interval 30",
        "configure lldp tx-hold 4",
    ]


def test_lldpd_only_where_desired_and_packages_per_family() -> None:
    expr = {"wanted": "{{ _lldpd_wanted }}", "pkgs": "{{ _lldpd_packages }}"}
    assert render("lldpd", expressions=expr) == {"wanted": True, "pkgs": ["lldpd"]}
    assert render("lldpd", host="ib-01", expressions=expr)["wanted"] is False
    assert render("lldpd", family="RedHat", facts=ROCKY, expressions=expr)["pkgs"] == ["lldpd"]


def test_lldpd_follows_a_changed_desired_state() -> None:
    out = render(
        "lldpd",
        templates={"conf": "templates/clusterforge.conf.j2"},
        variables={"clusterforge_desired": {"version": "clusterforge-desired/3", "lldp": {
            "enabled": True, "interfaces": ["r0", "stor0"], "port_id_subtype": "macaddress",
            "tx_interval_s": 10, "tx_hold": 3}}},
    )["conf"]  # fmt: skip
    assert "interface pattern r0,stor0\n" in out and "portidsubtype macaddress\n" in out
    assert "tx-interval 10\n" in out and "tx-hold 3\n" in out


@pytest.mark.parametrize(
    "lldp",
    [
        {"interfaces": ["r0,r1"]},
        {"interfaces": ["r0\nconfigure system hostname x"]},
        {"port_id_subtype": "ifname\nconfigure lldp status disabled"},
    ],
)
def test_lldpd_conf_refuses_odd_values(lldp: dict) -> None:
    base = {
        "enabled": True,
        "interfaces": ["r0"],
        "port_id_subtype": "ifname",
        "tx_interval_s": 30,
        "tx_hold": 4,
    }
    desired = {"version": "clusterforge-desired/3", "lldp": {**base, **lldp}}
    err = render_fails("lldpd", "templates/clusterforge.conf.j2", {"clusterforge_desired": desired})
    assert "is not a valid" in err
