"""A node with a BMC is certified against its vendor's BIOS map too: the map is in its digest."""

from clusterforge.plan import build_plan
from clusterforge.spec import load_spec_text
from tests.conftest import LAB_SPEC

LAB = LAB_SPEC.read_text()
IB01 = '      - {name: ib-01, bmc: {address: "127.0.0.1:8443", vendor: generic}}\n'  # the lab spec's entry


def _digests(text: str) -> dict[str, str]:
    return {n["name"]: n["expectation_digest"] for n in build_plan(load_spec_text(text)).doc["nodes"]}


def test_bios_vendor_map_changes_only_that_nodes_digest():
    assert LAB.count(IB01) == 1
    generic = _digests(LAB)
    dell = _digests(LAB.replace(IB01, IB01.replace("generic", "dell")))
    hpe = _digests(LAB.replace(IB01, IB01.replace("generic", "hpe")))
    no_bmc = _digests(LAB.replace(IB01, "      - {name: ib-01}\n"))
    assert len({generic["ib-01"], dell["ib-01"], hpe["ib-01"], no_bmc["ib-01"]}) == 4
    for other in ("ib-02", "roce-01", "roce-02"):
        assert dell[other] == generic[other] == hpe[other] == no_bmc[other]
