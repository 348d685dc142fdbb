"""Multi-node NVLink domains: the GB200 NVL72 catalog SKU, and the spec checks that keep every domain whole
and in one rack, and a Slurm cluster on one topology plugin."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clusterforge.spec import load_spec_text
from clusterforge.spec.sku import NvlinkDomain, Sku, Sourced, Thresholds, catalog, sku_problems
from tests.conftest import CLUSTERS

from ._helpers import FILE, at, edit, line_of, only, problems

GB200 = "gb200-nvl72-4x400g-ib"
SPEC = (CLUSTERS / "gb200-nvl72-2rack.yaml").read_text(encoding="utf-8")


def test_gb200_tray_is_four_gpus_of_a_72_gpu_rack_domain() -> None:
    sku = catalog()[GB200]
    assert sku_problems(sku) == []
    assert (sku.gpu.model, sku.gpu.count, sku.gpu.architecture) == ("NVIDIA GB200", 4, "blackwell")
    assert (sku.cpu.vendor, sku.cpu.sockets) == ("arm", 2)
    assert sku.nvlink_domain is not None
    assert (sku.nvlink_domain.nodes, sku.nvlink_domain.gpus) == (18, 72)
    assert sku.nvlink_domain.source.strip()
    rails = sku.compute_nics.rails
    assert [r.gpu for r in rails] == [0, 1, 2, 3]  # one ConnectX-7 per GPU
    assert {r.numa for r in rails} == {0, 1}
    assert sku.compute_nics.link_layer == "InfiniBand" and sku.compute_nics.speed_gbps == 400
    # no NVSwitch in the tray: the switch trays manage the fabric, so no Fabric Manager on the node
    assert not sku.gpu.nvswitch


def test_gb200_figures_carry_sources_and_say_what_is_unverified() -> None:
    sku = catalog()[GB200]
    for key, f in Thresholds.model_fields.items():
        if f.annotation is Sourced:
            assert getattr(sku.thresholds, key).source.strip(), key
    # the figures no capture backs are marked as such where they stand
    assert "UNVERIFIED" in sku.thresholds.allreduce_busbw_gbs.source
    assert sku.thresholds.allreduce_busbw_gbs.marker == "derived"
    assert "UNVERIFIED" in sku.sources["rails"]


def test_other_catalog_skus_have_no_nvlink_domain() -> None:
    assert [n for n, s in catalog().items() if s.nvlink_domain is not None] == [GB200]


def test_domain_gpus_must_be_nodes_times_gpus_per_node() -> None:
    sku = catalog()[GB200]
    bad = sku.model_copy(update={"nvlink_domain": NvlinkDomain(nodes=18, gpus=64, source="test")})
    [(path, expected, found, fix)] = sku_problems(bad)
    assert path == ("nvlink_domain", "gpus")
    assert "18 x 4 = 72" in expected and found == "64"
    assert "nvlink_domain.nodes" in fix


@pytest.mark.parametrize("nodes", [0, 1, 577])
def test_domain_size_bounds(nodes: int) -> None:
    with pytest.raises(ValidationError):
        NvlinkDomain(nodes=nodes, gpus=72, source="x")


def test_domain_is_strict() -> None:
    with pytest.raises(ValidationError):
        NvlinkDomain.model_validate({"nodes": "18", "gpus": 72, "source": "x"})
    with pytest.raises(ValidationError):
        Sku.model_validate({**catalog()[GB200].model_dump(), "nvlink_domain": {"nodes": 18, "gpus": 72}})


def test_the_example_spec_is_valid() -> None:
    spec = load_spec_text(SPEC, FILE)
    assert spec.skus[GB200].nvlink_domain is not None


def test_a_pool_fills_whole_domains() -> None:
    text = edit(SPEC, "    count: 36\n", "    count: 30\n")
    p = only(text)
    assert (p.path, p.line) == ("pools[0].count", line_of(text, "count: 30"))
    assert "multiple of 18 nodes" in p.expected and "72 GPUs per domain" in p.expected
    assert p.found == "30"
    assert p.fix == "set count to 18 or 36"


def test_a_domain_never_spans_two_racks() -> None:
    text = edit(SPEC, "nodes_per_rack: 18, power_kw: 132", "nodes_per_rack: 12, power_kw: 132")
    text = edit(text, "racks: {count: 2,", "racks: {count: 3,")
    p = only(text)
    assert (p.path, p.line) == ("site.racks.nodes_per_rack", line_of(text, "nodes_per_rack: 12"))
    assert "every NVLink domain of pool 'gpu'" in p.expected and "in one rack" in p.expected
    assert p.found == "domain gpu-0001..gpu-0018 split across racks r01, r02 at 12 nodes per rack"
    assert "multiple of 18" in p.fix


def _with_x86_pool(text: str, count: int) -> str:
    """The example with a pool of H100 nodes (no NVLink domain) placed before the GB200 trays."""
    text = edit(text, "skus: [gb200-nvl72-4x400g-ib]", "skus: [gb200-nvl72-4x400g-ib, h100-sxm-8x400g-ib]")
    text = edit(
        text,
        "pools:\n",
        "pools:\n  - {name: x86, sku: h100-sxm-8x400g-ib, "
        f'count: {count}, naming: "x-{{index:02d}}", fabric: ib0}}\n',
    )
    return edit(text, "racks: {count: 2,", "racks: {count: 3,")


def test_a_pool_before_the_domains_shifts_them_across_racks() -> None:
    """Nodes are placed rack by rack in spec order: 4 nodes of another pool first push every domain over a
    rack boundary, although the pool is a whole number of domains."""
    text = edit(_with_x86_pool(SPEC, 4), "pool_manager: slurm", "pool_manager: file")
    found = problems(text)  # also: one rail count per fabric (4 and 8 rails on ib0), not this test's concern
    p = at(found, "site.racks.nodes_per_rack")
    assert p.found == "domain gpu-0001..gpu-0018 split across racks r01, r02 at 18 nodes per rack"
    assert "give the pools before this one whole racks" in p.fix
    # a whole rack of them first: the domains start on a rack boundary again
    aligned = problems(edit(edit(text, "count: 4,", "count: 18,"), "power_kw: 132", "power_kw: 200"))
    assert [q.path for q in aligned] == ["fabrics.compute[0].name"]


def test_slurm_cannot_mix_block_and_tree() -> None:
    text = edit(_with_x86_pool(SPEC, 18), "power_kw: 132", "power_kw: 200")
    found = problems(text)
    p = at(found, "pools[0].sku")
    assert (p.path, p.line) == ("pools[0].sku", line_of(text, "name: x86"))
    assert "every pool's SKU with an NVLink domain (topology/block) or none (topology/tree)" in p.expected
    assert "pool 'gpu' has SKU gb200-nvl72-4x400g-ib" in p.expected
    assert p.found == "pool 'x86' with SKU h100-sxm-8x400g-ib, which has none"
    assert "two Slurm clusters" in p.fix
    assert sorted(q.path for q in found) == ["fabrics.compute[0].name", "pools[0].sku"]
    # the file and Kubernetes pool managers render no topology.conf: the mix is theirs to run
    other = problems(edit(text, "pool_manager: slurm", "pool_manager: file"))
    assert [q.path for q in other] == ["fabrics.compute[0].name"]


def test_arm64_has_no_iommu_off() -> None:
    """arm64 kernels take iommu.passthrough=0|1 (plan/desired.kernel_cmdline); `iommu=off` is x86/PowerPC."""
    text = edit(SPEC, "tuning:\n", 'tuning:\n  iommu: "off"\n')
    p = only(text)
    assert p.path == "tuning.iommu" and p.found == "off"
    assert GB200 in p.expected and "iommu.passthrough" in p.expected
    assert p.fix.startswith("set tuning.iommu: pt")


def test_a_sku_with_unverified_parts_warns_where_it_is_used() -> None:
    """The GB200 tray's rail names are no capture: the spec loads, with a warning at the pool naming them."""
    spec = load_spec_text(SPEC, FILE)
    (w,) = [w for w in spec.warnings if w.path == "pools[0].sku"]
    assert "compute_nics.rails" in w.found and GB200 in w.expected
    assert w.line == line_of(SPEC, f"sku: {GB200}")
    assert "ibdev2netdev" in w.fix
    verified = next(p for p in CLUSTERS.glob("*.yaml") if "gb200" not in p.name)
    assert not [w for w in load_spec_text(verified.read_text(), FILE).warnings if "unverified" in w.expected]
