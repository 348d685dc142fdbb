"""Burn-in statistics and localisation: pure functions, no I/O (docs/burnin.md, "Statistics").

* A *unit* is one thing measured every iteration: a GPU's H2D bandwidth, a rail's loopback bandwidth, a
  node pair on a rail, a node's all_reduce. Its *level* is the median over iterations, its *variation* the
  coefficient of variation (sample standard deviation / mean) over iterations.
* A unit's *fleet* is every unit of the same test on comparable hardware (same GPU model, same NIC model,
  speed and link layer). A unit is **low** when its level is below the fleet median by more than `z_max`
  robust z-scores: z = 0.6745 (x - median) / MAD (Iglewicz and Hoaglin's modified z-score), with the MAD
  floored at `mad_floor` x |median| so that a fleet whose units agree to a tenth of a percent does not flag
  a unit 0.5 % below. Fleets smaller than `min_fleet` units get no fleet verdict.
* A unit is **variable** when its CV over at least `min_samples_cv` iterations exceeds `cv_max`.
* Counters (corrected ECC, link errors) are judged on their *growth* during the run; a drop is a reset
  (reboot, counter clear) and counts the new value as growth since the reset.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from clusterforge.burnin.pairs import Pair

K = TypeVar("K", bound=Hashable)

MAD_SCALE = 0.6745  # Φ⁻¹(0.75): makes the MAD a consistent estimator of σ for normal data
# Port counters that only a bad cable, transceiver or port moves (the SKU's ib_error_counters_max names);
# discards and constraint errors are congestion or configuration, not the physical link.
LINK_COUNTERS: dict[str, int] = {
    "symbol_error": 1,
    "link_error_recovery": 1,
    "link_downed": 1,
    "port_rcv_errors": 1,
    "local_link_integrity_errors": 1,
    "port_rcv_remote_physical_errors": 1,
    "excessive_buffer_overrun_errors": 1,
}


@dataclass(frozen=True)
class AnalysisConfig:
    z_max: float = 3.5
    mad_floor: float = 0.01  # relative to the fleet median
    cv_max: float = 0.05
    min_fleet: int = 4
    min_samples_cv: int = 3
    max_failures: int = 0  # iterations a unit may fail to measure before it is flagged
    ecc_corrected_growth: int = 1  # corrected ECC errors gained during the run that flag a GPU
    link_counter_growth: Mapping[str, int] = field(default_factory=lambda: dict(LINK_COUNTERS))

    def as_dict(self) -> dict[str, object]:
        return {
            "z_max": self.z_max,
            "mad_floor": self.mad_floor,
            "cv_max": self.cv_max,
            "min_fleet": self.min_fleet,
            "min_samples_cv": self.min_samples_cv,
            "max_failures": self.max_failures,
            "ecc_corrected_growth": self.ecc_corrected_growth,
            "link_counter_growth": dict(self.link_counter_growth),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> AnalysisConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)  # type: ignore[arg-type]


# ---- primitives -------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def mad(values: Sequence[float], center: float | None = None) -> float:
    """Median absolute deviation (unscaled)."""
    c = median(values) if center is None else center
    return median([abs(v - c) for v in values])


def robust_z(x: float, center: float, spread: float) -> float:
    """Modified z-score of `x`; `spread` is the (floored) MAD and must be positive."""
    if spread <= 0:
        raise ValueError("robust_z needs a positive spread (floor the MAD)")
    return MAD_SCALE * (x - center) / spread


def floored_mad(values: Sequence[float], floor_rel: float) -> float:
    m = median(values)
    return max(mad(values, m), floor_rel * abs(m), 1e-12)


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation (sample std / mean); None for fewer than 2 values or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return statistics.stdev(values) / abs(mean)


def growth(series: Sequence[float]) -> float:
    """How much a monotonic counter grew over `series` (in time order); a drop is a reset."""
    total = 0.0
    for prev, cur in itertools.pairwise(series):
        total += cur if cur < prev else cur - prev
    return total


# ---- fleets ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitStats:
    samples: int
    failures: int
    level: float | None  # median over iterations
    cv: float | None
    fleet_size: int = 0
    fleet_median: float | None = None
    fleet_mad: float | None = None  # floored
    z: float | None = None
    low: bool = False
    variable: bool = False

    @property
    def failed(self) -> bool:
        return self.samples == 0 and self.failures > 0


def unit_stats(values: Sequence[float], failures: int, cfg: AnalysisConfig) -> UnitStats:
    level = median(values) if values else None
    var = cv(values) if len(values) >= cfg.min_samples_cv else None
    return UnitStats(len(values), failures, level, var, variable=var is not None and var > cfg.cv_max)


def fleet_stats(units: Mapping[K, tuple[Sequence[float], int]], cfg: AnalysisConfig) -> dict[K, UnitStats]:
    """Stats of every unit of ONE fleet: `units` maps a key to (values over iterations, failed iterations).

    Lower is worse (bandwidths): only units below the fleet median are called low.
    """
    base = {k: unit_stats(vals, fails, cfg) for k, (vals, fails) in units.items()}
    levels = [s.level for s in base.values() if s.level is not None]
    if len(levels) < cfg.min_fleet:
        return {k: _with_fleet(s, len(levels), None, None, cfg) for k, s in base.items()}
    center = median(levels)
    spread = floored_mad(levels, cfg.mad_floor)
    return {k: _with_fleet(s, len(levels), center, spread, cfg) for k, s in base.items()}


def _with_fleet(
    s: UnitStats, size: int, center: float | None, spread: float | None, cfg: AnalysisConfig
) -> UnitStats:
    z = robust_z(s.level, center, spread) if s.level is not None and center is not None and spread else None
    return UnitStats(
        s.samples,
        s.failures,
        s.level,
        s.cv,
        size,
        center,
        spread,
        z,
        low=z is not None and z < -cfg.z_max,
        variable=s.variable,
    )


def figure(x: float) -> str:
    """A measured value in a message: whole units from 10 up (``394``), three significant digits below
    (``0.0153``, ``7.21``), so small figures such as a lab's storage bandwidths do not print as 0."""
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.3g}"


def bad_reason(
    s: UnitStats, cfg: AnalysisConfig, floor: float | None = None, unit: str = "", floor_of: str = "SKU"
) -> str | None:
    """Why a unit is bad (first that applies), or None: failed, low vs fleet, below the floor (the SKU's, or
    ``floor_of``'s), variable."""
    u = f" {unit}" if unit else ""
    if s.failed or s.failures > cfg.max_failures:
        return f"failed in {s.failures} of {s.failures + s.samples} iterations"
    if s.low and s.level is not None and s.fleet_median is not None:
        return f"{figure(s.level)}{u} vs fleet {figure(s.fleet_median)}{u} (z {s.z:.1f})"
    if floor is not None and s.level is not None and s.level < floor:
        return f"{figure(s.level)}{u} below the {floor_of} floor {floor:g}{u}"
    if s.variable and s.cv is not None:
        return f"run-to-run variation {100 * s.cv:.1f} % (limit {100 * cfg.cv_max:.0f} %)"
    return None


# ---- pair localisation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairOutcome:
    pair: Pair
    bad: str | None  # why it is bad, None when good


@dataclass(frozen=True)
class Suspect:
    scope: (
        str  # "node" (evidence on the node itself) | "link" (node-leaf link) | "leaf" | "path" | "ambiguous"
    )
    target: str  # node name, or leaf / path name
    rail: int
    fabric: str
    pairs: tuple[str, ...]  # keys of the bad pairs it explains
    why: str


def localise_pairs(
    outcomes: Iterable[PairOutcome], node_evidence: Mapping[tuple[str, int], str] | None = None
) -> list[Suspect]:
    """Explain bad pair tests by the fewest components (docs/burnin.md, "Localisation").

    1. a bad pair with an end already known bad on that rail (`node_evidence[(node, rail)]`, e.g. its
       loopback test) is that end's fault;
    2. a node all of whose pairs on a rail are bad, while each partner passes with someone else on that
       rail, has a bad link on that rail (its NIC port, transceiver, cable or leaf port);
    3. bad intra-leaf pairs through one leaf that no single node explains: the leaf;
       bad cross-leaf pairs between two leaves that no single node explains: the path between them;
    4. what is left is ambiguous: either end's link, or the leaf.
    """
    evidence = dict(node_evidence or {})
    rows = list(outcomes)
    per_rail: dict[tuple[str, int], list[PairOutcome]] = defaultdict(list)
    for o in rows:
        per_rail[(o.pair.fabric, o.pair.rail)].append(o)
    out: list[Suspect] = []
    for (fabric, rail), group in sorted(per_rail.items()):
        left = [o for o in group if o.bad]
        explained: dict[str, list[str]] = defaultdict(list)
        for o in list(left):
            ends = [n for n in (o.pair.a, o.pair.b) if (n, rail) in evidence]
            if ends:
                for n in ends:
                    explained[n].append(o.pair.key)
                left.remove(o)
        for n, keys in sorted(explained.items()):
            out.append(Suspect("node", n, rail, fabric, tuple(keys), evidence[(n, rail)]))
        blamed = _blame_links(group, left, rail)
        for n, keys in sorted(blamed.items()):
            out.append(
                Suspect(
                    "link",
                    n,
                    rail,
                    fabric,
                    tuple(keys),
                    "every pair with this node on the rail is bad while its partners pass with other nodes",
                )
            )
        left = [o for o in left if not any(o.pair.key in k for k in blamed.values())]
        out += _leaf_or_path(left, fabric, rail)
    return out


def _blame_links(group: list[PairOutcome], bad: list[PairOutcome], rail: int) -> dict[str, list[str]]:
    bad_keys = {o.pair.key for o in bad}
    good = [o for o in group if not o.bad]
    blamed: dict[str, list[str]] = {}
    for n in sorted({x for o in bad for x in (o.pair.a, o.pair.b)}):
        mine = [o for o in group if o.pair.has(n)]
        if not mine or any(o.pair.key not in bad_keys for o in mine):
            continue
        partners = {o.pair.other(n) for o in mine}
        if all(any(g.pair.has(p) and not g.pair.has(n) for g in good) for p in partners):
            blamed[n] = [o.pair.key for o in mine]
    return blamed


def _leaf_or_path(left: list[PairOutcome], fabric: str, rail: int) -> list[Suspect]:
    out: list[Suspect] = []
    by_place: dict[tuple[str, ...], list[PairOutcome]] = defaultdict(list)
    for o in left:
        by_place[tuple(sorted(o.pair.leaves))].append(o)
    for place, items in sorted(by_place.items()):
        common = set.intersection(*({o.pair.a, o.pair.b} for o in items))
        keys = tuple(o.pair.key for o in items)
        if len(items) >= 2 and not common:
            scope, target = ("leaf", place[0]) if len(place) == 1 else ("path", " <-> ".join(place))
            out.append(
                Suspect(
                    scope,
                    target,
                    rail,
                    fabric,
                    keys,
                    f"{len(items)} bad pairs through it, no node common to all",
                )
            )
            continue
        for o in items:
            out.append(
                Suspect(
                    "ambiguous",
                    o.pair.key,
                    rail,
                    fabric,
                    (o.pair.key,),
                    f"{o.bad}; either end's rail-{rail} link or {' / '.join(o.pair.leaves)}",
                )
            )
    return out


def finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]
