"""One DOCA-Host → DOCA-OFED table (spec/catalog/software/doca.yaml): the spec rejects a doca-ofed pin it
cannot certify, the quick tier certifies `ofed_info -s` against the release's OFED version, and the lab's
vendor repository builds its packages from the same rows."""

from __future__ import annotations

from clusterforge.lab.sim import repo
from clusterforge.spec import doca, load_spec_text

from ._helpers import FILE, LAB, edit, only

PIN = 'rdma: {stack: doca-ofed, version: "2.10.0"}'


def test_table_rows_and_the_pin_forms() -> None:
    rel = doca.releases()
    assert rel["2.10.0"].ofed == "25.01-0.6.0" and rel["2.9.1"].mft == "4.30.1-1210"
    assert doca.expected_ofed("2.10.0") == "25.01-0.6.0"
    assert doca.expected_ofed("25.10") == "25.10" and doca.expected_ofed("24.10-1.1.4") == "24.10-1.1.4"
    assert doca.expected_ofed("3.2.0") is None and doca.expected_ofed("25.13") is None


def test_unknown_doca_release_is_rejected_with_the_table_named() -> None:
    p = only(edit(LAB, PIN, 'rdma: {stack: doca-ofed, version: "3.2.0"}'))
    assert p.path == "software.rdma.version" and p.found == "3.2.0"
    assert "2.10.0" in p.expected and "catalog/software/doca.yaml" in p.fix


def test_ofed_version_pin_and_inbox_are_accepted() -> None:
    load_spec_text(edit(LAB, PIN, 'rdma: {stack: doca-ofed, version: "25.10"}'), FILE)
    load_spec_text(edit(LAB, PIN, 'rdma: {stack: inbox, version: "3.2.0"}'), FILE)  # not a DOCA version


def test_lab_repository_builds_every_release_of_the_table() -> None:
    debs = {(d.name, d.version) for d in repo.doca_packages()}
    for r in doca.releases().values():
        assert ("doca-ofed", f"{r.doca}-1") in debs and ("ofed-scripts", f"{r.ofed}-1") in debs
        assert ("mft", r.mft) in debs
    script = next(
        d for d in repo.doca_packages() if d.name == "ofed-scripts" and d.version == "25.01-0.6.0-1"
    )
    assert 'echo "OFED-internal-25.01-0.6.0:"' in script.files["/usr/bin/ofed_info"]
