"""Network parts catalog: switch models (cages, logical ports per cage, each OS's port names) and the cable
and optics families the cabling sheet picks from. The data is YAML in `catalog/network/`, each fact with
its source; this module only loads it and answers questions about it."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.spec.yamlsrc import load_yaml_text

Connector = Literal["osfp-twin", "osfp", "qsfp112", "sfp28", "rj45"]
Shape = Literal["split", "straight", "fanout", "single"]
MediaKind = Literal["dac", "acc", "aoc", "mmf", "smf", "rj45"]
MEDIA_ORDER: tuple[MediaKind, ...] = ("dac", "acc", "aoc", "mmf", "smf", "rj45")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PortNames(_Strict):
    split: str
    whole: str


class SwitchModel(_Strict):
    description: str
    part_number: str | None
    part_source: str
    rack_units: int = Field(ge=1)
    cage: Connector
    cages: int = Field(ge=1)
    lanes_per_cage: int = Field(ge=1)
    ports_per_cage: dict[int, int]  # port speed (Gb/s) -> logical ports per cage
    default_os: str
    port_names: dict[str, PortNames]
    source: str
    marker: Literal["verified", "secondary", "derived"]
    ib_port_note: str | None = None


class Copper(_Strict):
    part: str
    kind: str
    lengths: list[float] = Field(min_length=1)


class Optical(_Strict):
    switch_optic: str
    other_optic: str
    fibre: str
    kind: str
    lengths: list[float] = Field(min_length=1)
    legs_per_fibre: int = Field(default=1, ge=1)

    @property
    def part(self) -> str:
        return self.fibre


class Family(_Strict):
    name: str
    description: str
    speeds: list[int]
    switch_end: Connector
    other_end: Connector
    shape: Shape
    dac: Copper | None = None
    acc: Copper | None = None
    aoc: Copper | None = None
    mmf: Optical | None = None
    smf: Optical | None = None
    rj45: Copper | None = None
    source: str
    marker: Literal["verified", "secondary", "derived"]

    def options(self) -> list[tuple[MediaKind, Copper | Optical]]:
        """(media, option) in the order they are tried."""
        return [(m, o) for m in MEDIA_ORDER if (o := getattr(self, m)) is not None]


class Reach(_Strict):
    source: str
    marker: Literal["verified", "secondary", "derived"]


class MediaCatalog(_Strict):
    reach: Reach
    families: list[Family]


def _load(name: str) -> dict[str, object]:
    text = (resources.files("clusterforge.spec") / "catalog" / "network" / name).read_text(encoding="utf-8")
    data = load_yaml_text(text, f"clusterforge/spec/catalog/network/{name}").data
    if not isinstance(data, dict):
        raise RuntimeError(f"network catalog {name} is not a mapping")
    return data


@cache
def switch_models() -> dict[str, SwitchModel]:
    """Every switch model the catalog describes, by model name (as the spec's `switch.model` names it)."""
    raw = _load("switches.yaml")["switches"]
    try:
        return {str(k): SwitchModel.model_validate(v) for k, v in dict(raw).items()}  # type: ignore[call-overload]
    except Exception as exc:  # a broken catalog is a bug in clusterforge, not user input
        raise RuntimeError(f"network catalog switches.yaml is invalid: {exc}") from exc


@cache
def media_catalog() -> MediaCatalog:
    try:
        return MediaCatalog.model_validate(_load("media.yaml"))
    except Exception as exc:
        raise RuntimeError(f"network catalog media.yaml is invalid: {exc}") from exc


def family_for(speed: int, switch_end: str, other_end: str, shape: Shape) -> Family | None:
    for f in media_catalog().families:
        if speed in f.speeds and f.switch_end == switch_end and f.other_end == other_end and f.shape == shape:
            return f
    return None


def length_code(metres: float) -> str:
    """NVIDIA LinkX length code: 3 -> '003', 1.5 -> '01A', 0.5 -> '00A', 100 -> '100'."""
    whole = int(metres)
    return f"{whole:02d}A" if metres - whole else f"{whole:03d}"


@cache
def part_number(template: str, metres: float) -> str:
    m = f"{metres:g}"
    return template.format(code=length_code(metres), metres=m)


class PortRef(NamedTuple):
    """A logical switch port: its plan number, front-panel cage, index in the cage, and name."""

    port: int
    cage: int
    sub: int
    name: str


class PortNaming:
    """Port naming for one switch model at one port speed, on one OS. Unknown models (or speeds the
    catalog does not list) get one port per cage named by its number: the sheet stays usable, and
    `known` says that the names are not the switch's own."""

    def __init__(self, model: str, speed: int, os: str | None = None) -> None:
        sw = switch_models().get(model)
        self.model = model
        self.spec = sw
        self.per_cage = sw.ports_per_cage.get(speed, 0) if sw else 0
        self.known = bool(sw and self.per_cage)
        self.os = (os or sw.default_os) if sw else "generic"
        if sw and self.known and self.os not in sw.port_names:
            raise ValueError(f"switch model {model} has no port names for OS {self.os!r}")
        self.connector: str = sw.cage if sw else "unknown"
        self.lanes = sw.lanes_per_cage if sw else 1
        self.max_ports = sw.cages * self.per_cage if sw and self.known else 0
        self._names = sw.port_names[self.os] if sw and self.known else None
        self._cache: dict[int, PortRef] = {}

    def ref(self, port: int) -> PortRef:
        """The cage and name of 1-based logical port `port`."""
        got = self._cache.get(port)
        if got is not None:
            return got
        if self._names is None:
            ref = PortRef(port, port, 0, str(port))
        else:
            per = self.per_cage
            cage, sub = divmod(port - 1, per)
            cage += 1
            tpl = self._names.split if per > 1 else self._names.whole
            lane = (cage - 1) * self.lanes + sub * (self.lanes // per)
            ref = PortRef(port, cage, sub, tpl.format(cage=cage, sub=sub, sub1=sub + 1, port=port, lane=lane))
        self._cache[port] = ref
        return ref


def port_name(model: str, speed: int, port: int, os: str | None = None) -> str:
    """The OS's own name of logical port `port` (1-based, the plan's numbering) of a `model` switch."""
    return PortNaming(model, speed, os).ref(port).name
