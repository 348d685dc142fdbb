"""A node with a BMC is certified against its vendor's BIOS map too: the map is in its digest."""

from pathlib import Path

from clusterforge.plan import build_plan
from clusterforge.spec import load_spec_text

LAB = (Path(__file__).resolve().parents[3] / "inventory" / "clusters" / "lab.yaml").read_text()
WITH_BMC = LAB.replace(
    '    naming: "ib-{index:02d}"\n    fabric: ib0\n',
    '    naming: "ib-{index:02d}"\n    fabric: ib0\n    nodes:\n'
    '      - {name: ib-01, bmc: {address: "127.0.0.1:8443", vendor: VENDOR}}\n',
)


def _digests(text: str) -> dict[str, str]:
    return {n["name"]: n["expectation_digest"] for n in build_plan(load_spec_text(text)).doc["nodes"]}


def test_bios_vendor_map_changes_only_that_nodes_digest():
    plain = _digests(LAB)
    dell = _digests(WITH_BMC.replace("VENDOR", "dell"))
    hpe = _digests(WITH_BMC.replace("VENDOR", "hpe"))
    assert dell["ib-01"] != plain["ib-01"] and dell["ib-01"] != hpe["ib-01"]
    for other in ("ib-02", "roce-01", "roce-02"):
        assert dell[other] == plain[other] == hpe[other]
