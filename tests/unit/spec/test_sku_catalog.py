"""The shipped SKU catalog: every entry loads, maps 8 rails to GPUs and NUMA nodes, sources its figures."""

from __future__ import annotations

import pytest

from clusterforge.spec.sku import RailNic, Sku, Sourced, Thresholds, catalog, sku_problems

EXPECTED = {  # name: (architecture, link layer, NIC Gb/s, GPU model substring)
    "h100-sxm-8x400g-ib": ("hopper", "InfiniBand", 400, "H100"),
    "h100-sxm-8x400g-roce": ("hopper", "Ethernet", 400, "H100"),
    "h200-sxm-8x400g-ib": ("hopper", "InfiniBand", 400, "H200"),
    "a100-sxm-8x200g-hdr": ("ampere", "InfiniBand", 200, "A100"),
    "b200-sxm-8x400g-ib": ("blackwell", "InfiniBand", 400, "B200"),
}
# NVLink links per GPU and therefore the `nvidia-smi topo -m` GPU<->GPU entry, by architecture:
# A100 has 12 NVLink3 links (NV12); H100/H200 18 NVLink4 (NV18); B200 18 NVLink5 (NV18).
TOPO = {"ampere": "NV12", "hopper": "NV18", "blackwell": "NV18"}


def test_catalog_holds_the_required_skus() -> None:
    assert set(EXPECTED) <= set(catalog())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sku_loads_with_its_architecture_and_nics(name: str) -> None:
    sku = catalog()[name]
    arch, layer, speed, model = EXPECTED[name]
    assert sku.name == name
    assert sku.gpu.architecture == arch
    assert model in sku.gpu.model
    assert sku.compute_nics.link_layer == layer
    assert sku.compute_nics.speed_gbps == speed
    assert sku_problems(sku) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_eight_rails_map_one_to_one_onto_gpus_and_valid_numa_nodes(name: str) -> None:
    sku = catalog()[name]
    rails = sku.compute_nics.rails
    assert sku.gpu.count == 8 and len(rails) == 8
    assert [r.rail for r in rails] == list(range(8))
    assert sorted(r.gpu for r in rails) == list(range(8))  # every GPU has its own NIC
    assert all(0 <= r.numa < sku.cpu.numa_nodes for r in rails)
    # GPUs 0-3 sit on the first socket, 4-7 on the second, on every HGX board in the catalog
    assert [r.numa for r in rails] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len({r.hca for r in rails}) == len({r.netdev for r in rails}) == len({r.pci for r in rails}) == 8


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_threshold_has_a_source(name: str) -> None:
    t = catalog()[name].thresholds
    sourced = [k for k, f in Thresholds.model_fields.items() if f.annotation is Sourced]
    assert len(sourced) == 9
    for key in sourced:
        fig = getattr(t, key)
        assert fig.source.strip(), f"{name}: {key} has no source"
        assert fig.unit.strip()
    assert t.ib_error_counters_source.strip()
    assert t.ib_error_counters_max and all(v >= 0 for v in t.ib_error_counters_max.values())
    assert catalog()[name].node_power_source.strip()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_topology_link_matches_the_architecture(name: str) -> None:
    g = catalog()[name].gpu
    assert g.nvlink.topo_link == TOPO[g.architecture]
    assert g.nvlink.topo_link == f"NV{g.nvlink.links_per_gpu}"
    assert g.nvswitch


def _with_rails(sku: Sku, rails: list[RailNic]) -> Sku:
    return sku.model_copy(update={"compute_nics": sku.compute_nics.model_copy(update={"rails": rails})})


def test_sku_problems_name_the_rail_and_field() -> None:
    base = catalog()["h100-sxm-8x400g-ib"]
    rails = list(base.compute_nics.rails)
    rails[2] = rails[2].model_copy(update={"gpu": 9, "numa": 4})
    rails[5] = rails[5].model_copy(update={"rail": 7, "hca": rails[0].hca})
    found = {p[0]: p for p in sku_problems(_with_rails(base, rails))}
    assert set(found) == {
        ("compute_nics", "rails", 2, "gpu"),
        ("compute_nics", "rails", 2, "numa"),
        ("compute_nics", "rails", 5, "rail"),
        ("compute_nics", "rails", 5, "hca"),
    }
    assert found[("compute_nics", "rails", 2, "gpu")][1:3] == ("a GPU index 0..7 (gpu.count is 8)", "9")
    assert found[("compute_nics", "rails", 5, "hca")][2] == "'mlx5_0' (also rail 0)"


def test_nvlink_speed_and_hbm_floor_agree_with_the_gpu() -> None:
    """NVLink's per-link speed is the generation's (a B200 entry copied from an H100 keeps 26.562 GB/s);
    the HBM floor cannot exceed the GPU's nominal bandwidth (no GPU could pass it)."""
    base = catalog()["b200-sxm-8x400g-ib"]
    gpu = base.gpu.model_copy(
        update={"nvlink": base.gpu.nvlink.model_copy(update={"link_speed_gbs": 26.562})}
    )
    hbm = base.thresholds.hbm_bandwidth_gbs.model_copy(update={"value": 9000.0})
    sku = base.model_copy(
        update={"gpu": gpu, "thresholds": base.thresholds.model_copy(update={"hbm_bandwidth_gbs": hbm})}
    )
    found = {p[0]: p for p in sku_problems(sku)}
    assert set(found) == {("gpu", "nvlink", "link_speed_gbs"), ("thresholds", "hbm_bandwidth_gbs", "value")}
    assert found[("gpu", "nvlink", "link_speed_gbs")][1:] == (
        "53.125 GB/s per link for NVLink generation 5 (as `nvidia-smi nvlink -s` prints it)",
        "26.562",
        "set link_speed_gbs: 53.125, or the generation these links are",
    )
    assert "8000.0 GB/s" in found[("thresholds", "hbm_bandwidth_gbs", "value")][1]
