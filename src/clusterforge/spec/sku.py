"""SKU model: what a node of a given hardware configuration is, and what it must measure.

The catalog itself is data (YAML files in `catalog/`), each figure with its source.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.spec.values import HcaName, IfName, Key, PciAddress, SkuName, Text, Token
from clusterforge.spec.yamlsrc import load_yaml_text


class _Strict(BaseModel):
    # strict: a count is an integer, not true or "2"; a number is finite (docs/security.md)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Sourced(_Strict):
    """A figure with its unit and where it comes from."""

    value: float
    unit: Text
    source: Text
    marker: Literal["verified", "secondary", "derived"] = "secondary"


#: per-link speed as `nvidia-smi nvlink -s` prints it, by NVLink generation (real captures in
#: tests/fixtures/real: A100 "25 GB/s" (gpud), H100 "26.562 GB/s" (elideng), GB200 "53.125 GB/s")
NVLINK_LINK_GBS = {3: 25.0, 4: 26.562, 5: 53.125}


class NvLink(_Strict):
    links_per_gpu: int = Field(ge=0, le=64)
    generation: int = Field(ge=0, le=16)
    topo_link: Token  # expected `nvidia-smi topo -m` GPU<->GPU entry, e.g. NV18
    link_speed_gbs: float = Field(gt=0, le=10_000)  # per link, as `nvidia-smi nvlink -s` prints it


class Pcie(_Strict):
    generation: int = Field(ge=3, le=6)
    width: int = Field(ge=1, le=16)


class Gpu(_Strict):
    model: Text  # product name as nvidia-smi prints it
    count: int = Field(ge=1, le=16)
    memory_mib: int = Field(gt=0, le=1 << 24)
    architecture: Literal["ampere", "hopper", "blackwell"]
    nvswitch: bool
    nvlink: NvLink
    pcie: Pcie
    power_limit_w: int = Field(gt=0, le=100_000)
    hbm_bandwidth_gbs: float = Field(gt=0, le=1_000_000)


class Cpu(_Strict):
    vendor: Literal["intel", "amd", "arm"]
    model: Text
    sockets: int = Field(ge=1, le=64)
    cores_per_socket: int = Field(ge=1, le=4096)
    numa_nodes: int = Field(ge=1, le=1024)


class RailNic(_Strict):
    """One compute NIC: its rail, RDMA device, netdev, paired GPU and NUMA node."""

    rail: int = Field(ge=0, le=63)
    hca: HcaName
    netdev: IfName
    gpu: int = Field(ge=0, le=63)
    numa: int = Field(ge=0, le=1023)
    pci: PciAddress  # bus id, e.g. 0000:18:00.0
    gpu_link: Token = "PIX"  # expected `nvidia-smi topo -m` GPU<->NIC entry


class ComputeNics(_Strict):
    model: Text
    part_id: Token  # e.g. MT4129 (ConnectX-7)
    speed_gbps: int = Field(gt=0, le=100_000)
    link_layer: Literal["InfiniBand", "Ethernet"]
    firmware_prefix: Token  # e.g. "28." for ConnectX-7
    rails: list[RailNic] = Field(min_length=1, max_length=64)

    @property
    def count(self) -> int:
        return len(self.rails)


class EthNics(_Strict):
    count: int = Field(ge=0, le=64)
    speed_gbps: int = Field(gt=0, le=100_000)
    netdev: IfName


class Thresholds(_Strict):
    """Certification floors and ceilings for one SKU; each figure carries its source."""

    allreduce_busbw_gbs: Sourced  # single-node 8-GPU all_reduce bus bandwidth floor
    ib_write_bw_gbps: Sourced  # per rail port, ib_write_bw average floor
    h2d_gbs: Sourced  # nvbandwidth host->device CE, per GPU
    d2h_gbs: Sourced
    d2d_gbs: Sourced  # nvbandwidth device<->device read CE, per pair
    hbm_bandwidth_gbs: Sourced
    ecc_sram_correctable_max: Sourced
    ecc_dram_correctable_max: Sourced
    retired_pages_max: Sourced
    ib_error_counters_max: dict[Key, int]  # sysfs counter name -> max
    ib_error_counters_source: Text


class NvlinkDomain(_Strict):
    """A multi-node NVLink domain: `nodes` nodes of this SKU whose GPUs share one NVLink fabric (NVLink
    switch trays outside the nodes), e.g. a GB200 NVL72 rack: 18 compute trays, 72 GPUs. Slurm then places
    jobs by domain (topology/block, docs/fabric.md); the spec fills whole domains, one rack each."""

    nodes: int = Field(ge=2, le=576)
    gpus: int = Field(ge=2, le=576 * 16)  # nodes x gpu.count (sku_problems)
    source: Text
    marker: Literal["verified", "secondary", "derived"] = "secondary"


class Sku(_Strict):
    name: SkuName
    description: Text
    node_power_kw: float = Field(gt=0, le=1000)
    node_power_source: Text
    gpu: Gpu
    cpu: Cpu
    compute_nics: ComputeNics
    storage_nics: EthNics
    management_nic: EthNics
    thresholds: Thresholds
    nvlink_domain: NvlinkDomain | None = None
    sources: dict[Key, Text] = Field(default_factory=dict)
    #: parts of this SKU no capture of a real node confirms (e.g. ``compute_nics.rails``): a spec using it
    #: gets a warning naming them, since certification would judge real nodes against these values
    unverified: list[Text] = Field(default_factory=list)


SkuProblem = tuple[tuple[str | int, ...], str, str, str]  # (path inside the SKU, expected, found, fix)


def sku_problems(sku: Sku) -> list[SkuProblem]:
    """Consistency of one SKU: rails numbered 0..n-1, unique devices, every rail on an existing GPU and NUMA
    node. Paths are relative to the SKU so that inline SKUs in a spec can be pointed at precisely."""
    out: list[SkuProblem] = []
    nv = sku.gpu.nvlink
    known = NVLINK_LINK_GBS.get(nv.generation)
    if known is not None and abs(nv.link_speed_gbs - known) > known * 0.01:
        out.append(
            (
                ("gpu", "nvlink", "link_speed_gbs"),
                f"{known} GB/s per link for NVLink generation {nv.generation} (as `nvidia-smi nvlink -s` "
                "prints it)",
                str(nv.link_speed_gbs),
                f"set link_speed_gbs: {known}, or the generation these links are",
            )
        )
    dom = sku.nvlink_domain
    if dom is not None and dom.gpus != dom.nodes * sku.gpu.count:
        out.append(
            (
                ("nvlink_domain", "gpus"),
                f"nodes x gpu.count = {dom.nodes} x {sku.gpu.count} = {dom.nodes * sku.gpu.count} GPUs in "
                "one NVLink domain",
                str(dom.gpus),
                "make nvlink_domain.nodes, nvlink_domain.gpus and gpu.count agree",
            )
        )
    floor = sku.thresholds.hbm_bandwidth_gbs.value
    if floor > sku.gpu.hbm_bandwidth_gbs:
        out.append(
            (
                ("thresholds", "hbm_bandwidth_gbs", "value"),
                f"a floor at most the GPU's nominal HBM bandwidth (gpu.hbm_bandwidth_gbs: "
                f"{sku.gpu.hbm_bandwidth_gbs} GB/s): no GPU could pass a higher one",
                str(floor),
                "lower the floor (DCGM's rule: 0.75 x the nominal), or correct gpu.hbm_bandwidth_gbs",
            )
        )
    rails = sku.compute_nics.rails
    for i, r in enumerate(rails):
        if r.rail != i:
            out.append(
                (
                    ("compute_nics", "rails", i, "rail"),
                    f"rail {i} (rails numbered 0..{len(rails) - 1} in order)",
                    str(r.rail),
                    "number the rails 0, 1, 2, ... in list order",
                )
            )
        if r.gpu >= sku.gpu.count:
            out.append(
                (
                    ("compute_nics", "rails", i, "gpu"),
                    f"a GPU index 0..{sku.gpu.count - 1} (gpu.count is {sku.gpu.count})",
                    str(r.gpu),
                    "map the rail to the GPU that shares its PCIe switch",
                )
            )
        if r.numa >= sku.cpu.numa_nodes:
            out.append(
                (
                    ("compute_nics", "rails", i, "numa"),
                    f"a NUMA node 0..{sku.cpu.numa_nodes - 1} (cpu.numa_nodes is {sku.cpu.numa_nodes})",
                    str(r.numa),
                    "use the NIC's NUMA node",
                )
            )
    for attr in ("hca", "netdev", "pci"):
        seen: dict[str, int] = {}
        for i, r in enumerate(rails):
            v = getattr(r, attr)
            if v in seen:
                out.append(
                    (
                        ("compute_nics", "rails", i, attr),
                        f"a {attr} used by one rail only",
                        f"'{v}' (also rail {seen[v]})",
                        f"give every rail its own {attr}",
                    )
                )
            seen.setdefault(v, i)
    return out


def _catalog_files() -> dict[str, str]:
    root = resources.files("clusterforge.spec") / "catalog"
    return {
        f.name[: -len(".yaml")]: f.read_text(encoding="utf-8")
        for f in root.iterdir()
        if f.name.endswith(".yaml")
    }


@cache
def catalog() -> dict[str, Sku]:
    """Every SKU shipped with clusterforge, by name."""
    out: dict[str, Sku] = {}
    for stem, text in sorted(_catalog_files().items()):
        doc = load_yaml_text(text, f"clusterforge/spec/catalog/{stem}.yaml")
        try:
            sku = Sku.model_validate(doc.data)
        except Exception as exc:  # a broken catalog is a bug in clusterforge, not user input
            raise RuntimeError(f"SKU catalog file {stem}.yaml is invalid: {exc}") from exc
        bad = sku_problems(sku)
        if bad:
            raise RuntimeError(f"SKU catalog file {stem}.yaml is inconsistent: {bad}")
        if sku.name != stem:
            raise RuntimeError(f"SKU catalog file {stem}.yaml declares name {sku.name!r}")
        out[sku.name] = sku
    return out
