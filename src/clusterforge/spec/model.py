"""The cluster spec (`apiVersion: clusterforge/v1`, `kind: Cluster`) as pydantic models.

Unknown keys are rejected everywhere (typos are caught); cross-field rules live in `checks.py`.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clusterforge.spec.sku import Sku


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Name = Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
MAC = Annotated[str, Field(pattern=r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")]


class Metadata(_Strict):
    name: Name
    description: str = ""


class Bmc(_Strict):
    address: str
    vendor: Literal["dell", "hpe", "supermicro", "generic"] = "generic"


class NodeEntry(_Strict):
    """Per-node facts for bare metal (optional in the lab)."""

    name: Name
    bmc: Bmc | None = None
    macs: dict[str, MAC] = Field(default_factory=dict)
    management_ip: ipaddress.IPv4Address | None = None


class Pool(_Strict):
    name: Name
    sku: str
    count: int = Field(ge=1, le=20000)
    naming: str = Field(description="python format pattern with {index} (1-based), e.g. 'gpu-{index:04d}'")
    fabric: Name
    nodes: list[NodeEntry] = Field(default_factory=list)

    @field_validator("naming")
    @classmethod
    def _pattern(cls, v: str) -> str:
        if "{index" not in v:
            raise ValueError("naming must contain {index} (e.g. 'gpu-{index:03d}')")
        try:
            v.format(index=1)
        except (KeyError, ValueError, IndexError) as exc:
            raise ValueError(f"naming is not a valid pattern: {exc}") from None
        return v


class Racks(_Strict):
    count: int = Field(ge=1)
    nodes_per_rack: int = Field(ge=1)
    power_kw: float = Field(gt=0, description="power budget per rack in kW")
    naming: str = "r{index:02d}"


class Site(_Strict):
    name: str = "site"
    racks: Racks


class Switch(_Strict):
    model: str
    radix: int = Field(ge=4, le=1024)
    port_speed_gbps: int = Field(gt=0)

    @field_validator("radix")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError("radix must be even (ports split between down- and uplinks)")
        return v


_RATIO = re.compile(r"^(\d+):(\d+)$")


class ComputeFabric(_Strict):
    name: Name
    type: Literal["infiniband", "roce"]
    topology: Literal["rail-optimized-fat-tree"] = "rail-optimized-fat-tree"
    switch: Switch
    oversubscription: str = "1:1"
    su_size: int = Field(default=32, ge=1)
    max_tiers: int | None = Field(default=None, ge=1, le=3, description="fail if the fabric needs more tiers")

    @field_validator("oversubscription")
    @classmethod
    def _ratio(cls, v: str) -> str:
        m = _RATIO.match(v)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or int(m.group(1)) < int(m.group(2)):
            raise ValueError("oversubscription must be 'down:up' with down >= up >= 1, e.g. '1:1' or '2:1'")
        return v

    @property
    def ratio(self) -> tuple[int, int]:
        d, u = self.oversubscription.split(":")
        return int(d), int(u)


class EthNetwork(_Strict):
    type: Literal["ethernet"] = "ethernet"
    speed_gbps: int = Field(gt=0)
    nics_per_node: int = Field(default=1, ge=0)
    mtu: int = Field(default=1500, ge=1280, le=9216)
    vlan: int | None = Field(default=None, ge=1, le=4094)


class Fabrics(_Strict):
    compute: list[ComputeFabric] = Field(min_length=1)
    storage: EthNetwork | None = None
    management: EthNetwork


class Addressing(_Strict):
    management: ipaddress.IPv4Network
    storage: ipaddress.IPv4Network | None = None
    compute: dict[str, list[ipaddress.IPv4Network]] = Field(
        description="per compute fabric, one CIDR per rail (index = rail)"
    )
    reserved: int = Field(
        default=10, ge=1, description="addresses kept at the start of every subnet for infra"
    )
    gateway: ipaddress.IPv4Address | None = None


class Driver(_Strict):
    branch: str = Field(pattern=r"^\d{3}$")
    version: str = Field(pattern=r"^\d{3}\.\d+(\.\d+)?$")  # must lie in `branch` (checks.py)


class Rdma(_Strict):
    stack: Literal["inbox", "rdma-core", "doca-ofed"] = Field(
        default="inbox",
        description="doca-ofed: NVIDIA's DOCA-OFED profile from the DOCA host repository, `version` the DOCA "
        "release; inbox (or rdma-core, its older name): the distribution's rdma-core, `version` its version",
    )
    version: str


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
    cuda: str = Field(pattern=r"^\d+\.\d+$")
    nccl: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    dcgm: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    rdma: Rdma
    nic_firmware: str | None = None
    vbios: str | None = None
    bios: str | None = None
    repositories: Repositories = Repositories()


class Hugepages(_Strict):
    size: Literal["2M", "1G"] = "1G"
    count: int = Field(default=0, ge=0)
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
    tuned_profile: str | None = "latency-performance"
    irqbalance: bool = True
    time_servers: list[str] = Field(default_factory=lambda: ["pool.ntp.org"])
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
        elif not re.match(r"^([1-9]\d?|100)%$", v):
            raise ValueError("serial must be a count or a percentage such as '25%'")
        return v


Tier = Literal["quick", "full", "burnin"]


class Certification(_Strict):
    join_tiers: list[Tier] = Field(default_factory=lambda: list[Tier](["quick"]))
    thresholds: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="per SKU name: threshold name -> value overriding the catalog"
    )
    validity_hours: int = Field(default=720, ge=1)
    perf_attempts: int = Field(default=3, ge=1, le=10)
    check_timeout_s: int = Field(default=60, ge=1)
    flap_window_hours: int = Field(default=24, ge=1)
    dcgm_level: int = Field(default=2, ge=1, le=4)


class Cluster(_Strict):
    """The whole validated spec; `skus` resolved to full SKU models."""

    apiVersion: Literal["clusterforge/v1"]
    kind: Literal["Cluster"]
    metadata: Metadata
    target: Literal["lab", "baremetal"]
    pool_manager: Literal["file", "slurm", "kubernetes"] = "file"
    skus: list[str | Sku] = Field(min_length=1)
    pools: list[Pool] = Field(min_length=1)
    site: Site
    fabrics: Fabrics
    addressing: Addressing
    software: Software
    tuning: Tuning = Tuning()
    rollout: Rollout = Rollout()
    certification: Certification = Certification()
