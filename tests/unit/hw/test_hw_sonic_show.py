"""SONiC read-back parsers on real captures (tests/fixtures/real/sonic-*, SOURCES.md)."""

from __future__ import annotations

import pytest

from clusterforge.hw import ParseError, sonic_show
from tests.conftest import REAL

FILES = {
    "sonic-show-interfaces-status__": [
        "sonic-show-interfaces-status__25g-sfp28-fec-none-rs-trunk-routed-su764__excerpt1.txt",
        "sonic-show-interfaces-status__as7816-64x-oper-na-no-fec-column-vlan3008-sonic477__excerpt2.txt",
    ],
    "sonic-show-queue-counters__": [
        "sonic-show-queue-counters__arista-7050cx3-td3-ethernet4-mc-drops-sbi6290__excerpt1.txt",
        "sonic-show-queue-counters__pfc-testbed-ethernet196-uc1-drops-huge-values-su2393__excerpt2.txt",
    ],
    "sonic-show-pfc-counters__": [
        "sonic-show-pfc-counters__z9332-th3-grep-tx-a10-prio3-comma-sbi9430__excerpt1.txt"
    ],
    "sonic-ecnconfig-l__": [
        "sonic-ecnconfig-l__spectrum-azure-lossless-wred-profile-nvidia-sonic-doc__1.txt"
    ],
    "sonic-mmuconfig-l__": [
        "sonic-mmuconfig-l__spectrum-buffer-pools-pg-lossless-profiles-nvidia-sonic-doc__1.txt"
    ],
}


def _real(prefix: str) -> list[str]:
    return [(REAL / name).read_text() for name in FILES[prefix]]


def test_interfaces_status_with_and_without_fec_column() -> None:
    with_fec, no_fec = _real("sonic-show-interfaces-status__")
    a = sonic_show.parse_interfaces_status(with_fec)
    assert len(a) == 7 and a[0].name == "Ethernet1" and a[0].speed_gbps == 25 and a[0].mtu == 9008
    assert (a[0].fec, a[0].alias, a[0].vlan, a[0].oper, a[0].admin) == (
        "none",
        "twentyfiveGigE1",
        "trunk",
        "up",
        "up",
    )
    assert (a[4].fec, a[4].oper, a[6].type) == ("rs", "down", "N/A")
    b = sonic_show.parse_interfaces_status(no_fec)
    assert b[0].lanes == (73, 74, 75, 76) and b[0].fec is None and b[0].oper == "N/A"
    assert b[0].type == "QSFP28 or later" and b[5].speed_gbps == 40 and b[5].mtu == 1500
    assert [p.name for p in b][-1] == "Ethernet32"


def test_queue_counters() -> None:
    arista, big = _real("sonic-show-queue-counters__")
    q = sonic_show.parse_queue_counters(arista)
    assert len(q) == 14 and q[0] == sonic_show.QueueCounters("Ethernet4", "UC0", 419, 78729, 0, 0)
    assert q[10].queue == "MC10" and not q[10].unicast and q[10].index == 10 and q[10].drop_packets == 48
    h = sonic_show.parse_queue_counters(big)
    assert h[1].index == 1 and h[1].drop_packets == 6841131615 and h[1].bytes == 13638863007480


def test_pfc_counters_commas() -> None:
    (text,) = _real("sonic-show-pfc-counters__")
    c = sonic_show.parse_pfc_counters(text)
    assert len(c) == 6 and {x.direction for x in c} == {"Tx"}
    assert c[3].port == "Ethernet6" and c[3].frames == (0, 0, 0, 15437, 0, 0, 0, 0)


def test_ecnconfig_and_mmuconfig() -> None:
    (ecn,) = _real("sonic-ecnconfig-l__")
    w = sonic_show.profiles(sonic_show.parse_profiles(ecn, "ecnconfig -l"))
    assert list(w) == ["AZURE_LOSSLESS"] and w["AZURE_LOSSLESS"]["ecn"] == "ecn_all"
    assert w["AZURE_LOSSLESS"]["green_min_threshold"] == "1048576" and len(w["AZURE_LOSSLESS"]) == 13
    (mmu,) = _real("sonic-mmuconfig-l__")
    blocks = sonic_show.parse_profiles(mmu)
    pools = sonic_show.profiles(blocks, "Pool")
    assert pools["ingress_lossless_pool"] == {"type": "ingress", "mode": "dynamic", "size": "2097152"}
    pg = sonic_show.profiles(blocks)["pg_lossless_100000_300m_profile"]
    assert (pg["xon"], pg["xoff"], pg["size"]) == ("18432", "165888", "184320")
    assert pg["pool"] == "[BUFFER_POOL|ingress_lossless_pool]"


def test_cut_or_foreign_outputs_are_refused() -> None:
    (mmu,) = _real("sonic-mmuconfig-l__")
    cut = mmu[: mmu.index("size 184320")]
    with pytest.raises(ParseError, match=r"closing rule|unexpected line"):
        sonic_show.parse_profiles(cut.rsplit("\n", 2)[0] + "\n")
    with pytest.raises(ParseError):
        sonic_show.parse_interfaces_status("no table here\n")
    with pytest.raises(ParseError):
        sonic_show.parse_pfc_counters("    Port    PFC0\n------  ----\nEthernet0  1\n")
    (text,) = _real("sonic-show-pfc-counters__")
    with pytest.raises(ParseError, match="not a counter"):
        sonic_show.parse_pfc_counters(text.replace("15,437", "lots!"))
