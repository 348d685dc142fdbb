"""Media and length class of a group of links that share a switch cage (docs/fabric.md, media rules).

A group is the legs of one switch cage: one splitter cable or one 800G cable when copper reaches, otherwise
a transceiver in the cage, a fibre per leg (or per two legs on 1:2 splitter fibre) and a transceiver at the
far end of each leg. The medium is the first of the family's (dac, acc, aoc, mmf, smf, rj45) whose longest
orderable length holds the longest leg's estimated run; lengths are rounded up to the next orderable one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from clusterforge.plan.site_layout import Loc, run_m
from clusterforge.spec.model import Cabling
from clusterforge.spec.netcatalog import Copper, Family, MediaKind, Optical, part_number


class Leg(NamedTuple):
    """One logical link on its way to becoming a Cable row."""

    fabric: str
    kind: str
    a_dev: str
    a_port: int
    a_name: str
    a_cage: int | None
    a_loc: Loc
    b_dev: str
    b_port: int
    b_name: str
    b_cage: int | None
    b_loc: Loc
    speed: int
    cable_id: str


class Cable(NamedTuple):
    fabric: str  # compute fabric name, or mgmt / bmc / storage
    kind: str
    a_device: str
    a_port: int  # node-leaf: rail index; other node links: NIC index; switches: the plan's 1-based port
    b_device: str
    b_port: int
    speed_gbps: int
    cable_id: str
    assembly_id: str
    a: Loc
    a_port_name: str
    a_cage: int | None
    b: Loc
    b_port_name: str
    b_cage: int | None
    media: str  # dac, acc, aoc, mmf, smf, rj45
    cable_type: str  # what the part is, e.g. "DAC splitter 800G to 2x400G OSFP"
    cable_part: str  # cable or fibre part number ("" when the catalog has none)
    length_m: float
    length_estimate_m: float
    a_optic: str
    b_optic: str

    @property
    def label(self) -> str:
        a, b = self.a, self.b
        return (
            f"{self.cable_id} {a.rack}U{a.u:02d} {self.a_device} {self.a_port_name} <-> "
            f"{b.rack}U{b.u:02d} {self.b_device} {self.b_port_name}"
        )

    def csv_row(self) -> tuple[Any, ...]:
        a, b = self.a, self.b
        return (
            *self[:9],
            *(a.site, a.row, a.rack, a.u, self.a_port_name, "" if self.a_cage is None else self.a_cage),
            *(b.site, b.row, b.rack, b.u, self.b_port_name, "" if self.b_cage is None else self.b_cage),
            self.media,
            self.cable_type,
            self.cable_part,
            f"{self.length_m:g}",
            f"{self.length_estimate_m:.1f}",
            self.a_optic,
            self.b_optic,
            self.label,
        )


@dataclass
class GroupEnds:
    legs: list[Leg]
    family: Family | None
    switch_end: str  # "a" or "b": the end whose cage the legs share


_MMF = [3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0]
GENERIC = Family.model_construct(
    name="generic",
    description="no catalog family for this switch model, speed and connector: media by reach only",
    speeds=[],
    switch_end="osfp-twin",
    other_end="osfp",
    shape="split",
    dac=Copper(part="", kind="DAC (no catalog part)", lengths=[1, 1.5, 2, 2.5, 3]),
    acc=Copper(part="", kind="ACC (no catalog part)", lengths=[4, 5]),
    aoc=None,
    mmf=Optical(
        switch_optic="", other_optic="", fibre="", kind="multimode fibre (no catalog part)", lengths=_MMF
    ),
    smf=Optical(
        switch_optic="",
        other_optic="",
        fibre="",
        kind="single-mode fibre (no catalog part)",
        lengths=[*_MMF, 100],
    ),
    rj45=None,
    source="reach limits of the LinkX overview cited in media.yaml",
    marker="derived",
)


def _fit(lengths: list[float], need: float) -> float | None:
    for x in lengths:
        if x + 1e-9 >= need:
            return x
    return None


_OPTIONS: dict[str, list[tuple[MediaKind, Copper | Optical]]] = {}
_new = tuple.__new__


def assign_group(g: GroupEnds, pol: Cabling) -> list[tuple[Leg, Cable]]:
    fam = g.family or GENERIC
    options = _OPTIONS.get(fam.name)
    if options is None:
        options = _OPTIONS[fam.name] = fam.options()
    ests = [run_m(x.a_loc, x.b_loc, pol) for x in g.legs]
    need = max(ests)
    chosen = next(((m, o, n) for m, o in options if (n := _fit(o.lengths, need)) is not None), None)
    if chosen is None:
        worst = g.legs[ests.index(need)]
        longest = max((max(o.lengths) for _, o in options), default=0)
        raise ValueError(
            f"{need:.1f} m from {worst.a_loc.short} {worst.a_dev} to {worst.b_loc.short} {worst.b_dev} "
            f"({worst.kind}); "
            f"the longest {fam.name} medium is {longest:g} m"
        )
    media, opt, length = chosen
    out: list[tuple[Leg, Cable]] = []
    kind = opt.kind

    def row(x: Leg, asm: str, part: str, metres: float, est: float, a_opt: str, b_opt: str) -> None:
        out.append((x, _new(Cable, (
            x[0], x[1], x[2], x[3], x[7], x[8], x[12], x[13], asm, x[6], x[4], x[5], x[11], x[9], x[10],
            media, kind, part, metres, round(est, 1), a_opt, b_opt,
        ))))  # fmt: skip

    if isinstance(opt, Copper):
        part = part_number(opt.part, length) if opt.part else ""
        asm = g.legs[0].cable_id
        for x, est in zip(g.legs, ests, strict=True):
            row(x, asm, part, length, est, "", "")
        return out
    assert isinstance(opt, Optical)
    sw_opt, far = opt.switch_optic, opt.other_optic
    a_opt, b_opt = (sw_opt, far) if g.switch_end == "a" else (far, sw_opt)
    per = opt.legs_per_fibre
    for i in range(0, len(g.legs), per):
        chunk, chunk_est = g.legs[i : i + per], ests[i : i + per]
        metres = _fit(opt.lengths, max(chunk_est))
        assert metres is not None  # the longest leg fits, so every leg does
        part = part_number(opt.fibre, metres) if opt.fibre else ""
        for x, est in zip(chunk, chunk_est, strict=True):
            row(x, chunk[0].cable_id, part, metres, est, a_opt, b_opt)
    return out
