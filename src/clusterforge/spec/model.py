"""The cluster spec (`apiVersion: clusterforge/v1`, `kind: Cluster`) as pydantic models.

Unknown keys are rejected everywhere (typos are caught); cross-field rules live in `checks.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clusterforge.spec.sku import Sku
from clusterforge.spec.storage import Storage
from clusterforge.spec.values import (
    CounterName,
    Host,
    HostPort,
    IfName,
    IPv4Addr,
    IPv4Net,
    Key,
    NodeNaming,
    RackNaming,
    SkuName,
    Text,
    Token,
    TunedProfile,
)

MAX_POOLS = 1024
MAX_FABRICS = 64
MAX_RAILS = 64  # as ComputeNics.rails


class _Strict(BaseModel):
    # strict: a count is an integer, not true or "2"; a number is finite (docs/security.md)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


Name = Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
MAC = Annotated[str, Field(pattern=r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")]


class Metadata(_Strict):
    name: Name
    description: Text = ""


class Bmc(_Strict):
    address: HostPort
    vendor: Literal["dell", "hpe", "supermicro", "generic"] = "generic"


class NodeEntry(_Strict):
    """Per-node facts for bare metal (optional in the lab)."""

    name: Name
    bmc: Bmc | None = None
    macs: dict[IfName, MAC] = Field(default_factory=dict)
    management_ip: IPv4Addr | None = None


class Pool(_Strict):
    name: Name
    sku: SkuName
    count: int = Field(ge=1, le=20000)
    naming: NodeNaming = Field(description="format pattern with {index} (1-based), e.g. 'gpu-{index:04d}'")
    fabric: Name
    nodes: list[NodeEntry] = Field(default_factory=list, max_length=20000)


class Racks(_Strict):
    count: int = Field(ge=1, le=1_000_000)
    nodes_per_rack: int = Field(ge=1, le=1024)
    power_kw: float = Field(gt=0, le=10_000, description="power budget per rack in kW")
    naming: RackNaming = "r{index:02d}"


class Spares(_Strict):
    percent: float = Field(default=5, ge=0, le=100, description="spares on cables and optics, per BOM line")
    minimum: int = Field(default=1, ge=0, description="at least this many spares on each cable or optic line")
    switches_percent: float = Field(default=0, ge=0, le=100, description="spare switches, per model")


class Cabling(_Strict):
    """Physical layout and cabling policy: where racks and switches stand, how cable runs are estimated,
    which connectors the NICs have, which switches take management, BMC and storage (docs/fabric.md)."""

    racks_per_row: int = Field(default=16, ge=1)
    rack_units: int = Field(default=48, ge=8, le=60)
    node_height_u: int = Field(default=8, ge=1, le=20)
    first_node_u: int = Field(default=2, ge=1, description="U of the lowest node in a compute rack")
    rack_width_m: float = Field(default=0.6, gt=0)
    row_pitch_m: float = Field(default=2.4, gt=0, description="row to row, rack depth plus aisle")
    tray_rise_m: float = Field(default=0.5, ge=0, description="per end, rack top to the overhead tray")
    slack_m: float = Field(default=1.0, ge=0, description="added to every run (service loops)")
    switches_per_network_rack: int = Field(default=16, ge=1)
    compute_nic_connector: Literal["osfp", "qsfp112"] = "osfp"
    storage_nic_connector: Literal["osfp", "qsfp112"] = "qsfp112"
    management_switch: str = "SN3420"
    bmc_switch: str = "SN2201"
    storage_switch: str = "SN5600"
    spares: Spares = Spares()


class Site(_Strict):
    name: Token = "site"
    racks: Racks
    cabling: Cabling = Cabling()


class Switch(_Strict):
    model: Text
    radix: int = Field(ge=4, le=1024)
    port_speed_gbps: int = Field(gt=0, le=100_000)

    @field_validator("radix")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError("radix must be even (ports split between down- and uplinks)")
        return v


_RATIO = re.compile(r"([0-9]{1,4}):([0-9]{1,4})")


class ComputeFabric(_Strict):
    name: Name
    type: Literal["infiniband", "roce"]
    topology: Literal["rail-optimized-fat-tree"] = "rail-optimized-fat-tree"
    switch: Switch
    oversubscription: str = "1:1"
    su_size: int = Field(default=32, ge=1, le=1024)
    max_tiers: int | None = Field(default=None, ge=1, le=3, description="fail if the fabric needs more tiers")

    @field_validator("oversubscription")
    @classmethod
    def _ratio(cls, v: str) -> str:
        m = _RATIO.fullmatch(v)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or int(m.group(1)) < int(m.group(2)):
            raise ValueError("oversubscription must be 'down:up' with down >= up >= 1, e.g. '1:1' or '2:1'")
        return v

    @property
    def ratio(self) -> tuple[int, int]:
        d, u = self.oversubscription.split(":")
        return int(d), int(u)


class EthNetwork(_Strict):
    type: Literal["ethernet"] = "ethernet"
    speed_gbps: int = Field(gt=0, le=100_000)
    nics_per_node: int = Field(default=1, ge=0, le=64)
    mtu: int = Field(default=1500, ge=1280, le=9216)
    vlan: int | None = Field(default=None, ge=1, le=4094)


class StorageNetwork(EthNetwork):
    lossless: bool = Field(
        default=False,
        description="RoCE storage: the storage NICs get the compute rails' lossless QoS (tuning.roce)",
    )


class Fabrics(_Strict):
    compute: list[ComputeFabric] = Field(min_length=1, max_length=MAX_FABRICS)
    storage: StorageNetwork | None = None
    management: EthNetwork


class Addressing(_Strict):
    management: IPv4Net
    storage: IPv4Net | None = None
    compute: dict[Key, Annotated[list[IPv4Net], Field(max_length=MAX_RAILS)]] = Field(
        description="per compute fabric, one CIDR per rail (index = rail)", max_length=MAX_FABRICS
    )
    reserved: int = Field(
        default=10, ge=1, le=1 << 24, description="addresses kept at the start of every subnet for infra"
    )
    gateway: IPv4Addr | None = None


class Driver(_Strict):
    branch: str = Field(pattern=r"^[0-9]{3}$")
    version: str = Field(pattern=r"^[0-9]{3}\.[0-9]{1,6}(\.[0-9]{1,6})?$")  # must lie in `branch` (checks.py)


class Rdma(_Strict):
    stack: Literal["inbox", "rdma-core", "doca-ofed"] = Field(
        default="inbox",
        description="doca-ofed: NVIDIA's DOCA-OFED profile from the DOCA host repository, `version` the DOCA "
        "release; inbox (or rdma-core, its older name): the distribution's rdma-core, `version` its version",
    )
    version: Token


class BenchmarkTool(_Strict):
    """A benchmark tool the full tier and burn-in run, installed by the `benchmarks` role at `version`:
    ``package`` from the site's repositories, ``artifact`` (an operator-built tarball: ``url`` + ``sha256``)
    or ``source`` (the upstream release tag v<version>, built on the node; ``sha256`` of its tarball)."""

    version: str = Field(pattern=r"^[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?$")
    install: Literal["package", "artifact", "source"] = "package"
    package: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9.+-]{0,63}$")
    # no quote, space, `$`, `;`, backslash or brace: the URL reaches a module argument, never a shell
    url: str | None = Field(
        default=None, max_length=2048, pattern=r"^(https?|file)://[A-Za-z0-9._~:/?#@%+=&,-]+$"
    )
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _method(self) -> BenchmarkTool:
        if self.install == "artifact" and not (self.url and self.sha256):
            raise ValueError("install: artifact needs url and sha256")
        if self.install != "artifact" and self.url:
            raise ValueError("url is only for install: artifact")
        if self.install != "package" and self.package:
            raise ValueError("package is only for install: package")
        if self.install == "package" and self.sha256:
            raise ValueError("sha256 is for install: artifact or source")
        return self


HttpUrl = Annotated[str, Field(pattern=r"^https?://[^\s'\"{}]+$")]


class AptRepository(_Strict):
    url: HttpUrl
    suite: str = Field(default="/", pattern=r"^[A-Za-z0-9._/-]+$", description="'/' for a flat repository")
    components: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]] = Field(default_factory=list)
    key_url: HttpUrl | None = Field(default=None, description="the repository's signing key (signed-by)")
    trusted: bool = Field(default=False, description="[trusted=yes]: an internal mirror without signatures")


class Repositories(_Strict):
    """Where nodes get their packages. Unset fields keep the roles' defaults (the node's own distribution
    sources, NVIDIA's public CUDA and DOCA repositories)."""

    apt_proxy: HttpUrl | None = Field(default=None, description="HTTP proxy for apt/dnf (e.g. apt-cacher-ng)")
    no_proxy: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9.:-]+$")]] = Field(
        default_factory=list, description="hosts reached without the proxy"
    )
    distribution_mirror: HttpUrl | None = Field(
        default=None, description="Debian/Ubuntu archive or RHEL-family mirror"
    )
    security_mirror: HttpUrl | None = Field(default=None, description="Debian/Ubuntu security archive mirror")
    vendor: AptRepository | None = Field(default=None, description="NVIDIA CUDA repository (driver, DCGM)")
    doca: AptRepository | None = Field(default=None, description="DOCA host repository (doca-ofed)")


class Software(_Strict):
    nvidia_driver: Driver
    cuda: str = Field(pattern=r"^[0-9]{1,4}\.[0-9]{1,4}$")
    nccl: str = Field(pattern=r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$")
    dcgm: str = Field(pattern=r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$")
    dcgm_exporter: str = Field(
        default="4.5.0",
        pattern=r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$",
        description="dcgm-exporter version (NVIDIA's datacenter-gpu-manager-exporter package)",
    )
    rdma: Rdma
    nic_firmware: Token | None = None
    vbios: Token | None = None
    bios: Token | None = None
    nccl_tests: BenchmarkTool = BenchmarkTool(version="2.14.1")
    nvbandwidth: BenchmarkTool = BenchmarkTool(version="0.8")
    repositories: Repositories = Repositories()


class Hugepages(_Strict):
    size: Literal["2M", "1G"] = "1G"
    count: int = Field(default=0, ge=0, le=1 << 24)
    per_numa: bool = False


class RoceQos(_Strict):
    lossless_priority: int = Field(default=3, ge=0, le=7)
    dscp: int = Field(default=26, ge=0, le=63)
    cnp_dscp: int = Field(default=48, ge=0, le=63)
    cnp_priority: int = Field(default=6, ge=0, le=7)
    mtu: int = Field(default=9000, ge=1500, le=9216)
    ecn: bool = True
    pfc_watchdog: bool = True

    @property
    def tos(self) -> int:
        """ToS byte: DSCP in the upper six bits, ECT(0) in the ECN bits (26 -> 106)."""
        return (self.dscp << 2) | 2


class Tuning(_Strict):
    hugepages: Hugepages = Hugepages()
    cstate_max: int = Field(default=1, ge=0, le=10, description="deepest allowed C-state index (1 = C1 only)")
    governor: Literal["performance", "schedutil", "ondemand", "powersave"] = "performance"
    thp: Literal["always", "madvise", "never"] = "madvise"
    numa_balancing: bool = False
    iommu: Literal["pt", "off", "on"] = "pt"
    tuned_profile: TunedProfile | None = "latency-performance"
    irqbalance: bool = True
    time_servers: list[Host] = Field(default_factory=lambda: ["pool.ntp.org"], max_length=16)
    acs_disable: bool = True
    ecc: bool = True
    mig: bool = False
    roce: RoceQos = RoceQos()


class Rollout(_Strict):
    serial: int | str = 1
    max_fail_percentage: int = Field(default=0, ge=0, le=100)

    @field_validator("serial")
    @classmethod
    def _serial(cls, v: int | str) -> int | str:
        if isinstance(v, int):
            if v < 1:
                raise ValueError("serial must be >= 1")
        elif not re.fullmatch(r"([1-9][0-9]?|100)%", v):
            raise ValueError("serial must be a count or a percentage such as '25%'")
        return v


Tier = Literal["quick", "full", "burnin"]


MAX_COUNTERS = 64
CounterRate = Annotated[float, Field(ge=0)]
WindowS = Annotated[float, Field(ge=0.5, le=300)]


class CounterLimits(_Strict):
    """Link-counter limits over the policy's (spec/catalog/network/counter_policy.yaml): increments per
    second (null = measured and reported, not judged), and the window between the two readings."""

    window_s: WindowS | None = Field(
        default=None, description="seconds between the readings; default the policy's"
    )
    limits: dict[CounterName, CounterRate | None] = Field(
        default_factory=dict,
        max_length=MAX_COUNTERS,
        description="counter name ({prio} for the lossless priority) -> increments per second, or null",
    )


class LinkCounters(CounterLimits):
    """`certification.link_counters`: site-wide limits and window, then per SKU name (later wins)."""

    skus: dict[SkuName, CounterLimits] = Field(
        default_factory=dict, description="per SKU name: limits and window overriding the site-wide ones"
    )


class Certification(_Strict):
    join_tiers: list[Tier] = Field(default_factory=lambda: list[Tier](["quick"]))
    thresholds: dict[SkuName, dict[Key, float]] = Field(
        default_factory=dict, description="per SKU name: threshold name -> value overriding the catalog"
    )
    validity_hours: int = Field(default=720, ge=1, le=87_600)
    perf_attempts: int = Field(default=3, ge=1, le=10)
    check_timeout_s: int = Field(default=60, ge=1, le=86_400)
    flap_window_hours: int = Field(default=24, ge=1, le=87_600)
    dcgm_level: int = Field(default=2, ge=1, le=4)
    health_interval_s: int = Field(
        default=300,
        ge=10,
        le=86_400,
        description="passive health check period: Slurm's HealthCheckInterval, or the systemd timer's",
    )
    link_counters: LinkCounters = Field(
        default_factory=LinkCounters,
        description="link-counter limits and window over the counter policy's (docs/spec.md)",
    )


class Cluster(_Strict):
    """The whole validated spec; `skus` resolved to full SKU models."""

    apiVersion: Literal["clusterforge/v1"]
    kind: Literal["Cluster"]
    metadata: Metadata
    target: Literal["lab", "baremetal"]
    pool_manager: Literal["file", "slurm", "kubernetes"] = "file"
    skus: list[SkuName | Sku] = Field(min_length=1, max_length=256)
    pools: list[Pool] = Field(min_length=1, max_length=MAX_POOLS)
    site: Site
    fabrics: Fabrics
    addressing: Addressing
    software: Software
    tuning: Tuning = Tuning()
    rollout: Rollout = Rollout()
    certification: Certification = Certification()
    storage: Storage | None = None
