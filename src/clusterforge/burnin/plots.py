"""Figures for the burn-in report: matplotlib (Agg) rendered to base64 PNG data URIs (no external asset)."""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from clusterforge.burnin.analysis import MAD_SCALE, UnitStats

UnitKey = tuple[str, str, str, str]
BAD, OK, GREY = "#c62828", "#1565c0", "#9e9e9e"


def data_uri(fig: Figure, dpi: int = 80) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)  # no bbox_inches="tight": it draws the figure twice
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _label(key: UnitKey) -> str:
    _t, node, comp, peer = key
    if peer and "," in peer:
        return node
    return " ".join(x for x in (node, comp, f"~{peer}" if peer else "") if x)


def fleet_box(
    title: str, unit: str, units: Mapping[UnitKey, UnitStats], flagged: set[UnitKey], z_max: float
) -> str:
    """One fleet: a box plot of its units' levels, every unit a dot, flagged units red and named; the dashed
    line is the fleet median, the dotted one the level below which a unit is an outlier."""
    fig, ax = plt.subplots(figsize=(7.5, 2.2 + 0.12 * min(len(flagged), 10)))
    levels = [(k, s.level) for k, s in sorted(units.items()) if s.level is not None]
    values = [v for _, v in levels]
    if values:
        ax.boxplot(values, orientation="horizontal", widths=0.5, showfliers=False)
    for i, (k, v) in enumerate(levels):
        jitter = 1 + 0.18 * (((i * 7919) % 13) / 12 - 0.5)
        bad = k in flagged
        ax.plot(v, jitter, "o", ms=6 if bad else 4, color=BAD if bad else OK, alpha=0.9 if bad else 0.6)
        if bad:
            ax.annotate(
                _label(k), (v, jitter), xytext=(4, 6), textcoords="offset points", fontsize=8, color=BAD
            )
    s0 = next(iter(units.values()), None)
    if s0 is not None and s0.fleet_median is not None and s0.fleet_mad:
        limit = s0.fleet_median - z_max * s0.fleet_mad / MAD_SCALE
        ax.axvline(s0.fleet_median, color=GREY, ls="--", lw=1)
        ax.axvline(limit, color=BAD, ls=":", lw=1)
        lo, hi = min([*values, limit]), max([*values, s0.fleet_median])
        pad = max(0.03 * s0.fleet_median, 0.05 * (hi - lo))
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_yticks([])
    ax.set_xlabel(unit)
    small = s0 is not None and s0.fleet_median is None
    ax.set_title(
        title + (f" (fleet of {len(values)}: too small for a fleet verdict)" if small else ""), fontsize=10
    )
    fig.subplots_adjust(left=0.03, right=0.97, bottom=0.22, top=0.85)
    return data_uri(fig)


def node_figure(
    node: str,
    series: Mapping[UnitKey, Sequence[tuple[int, float | None]]],
    flagged: set[UnitKey],
) -> str:
    """Per node: bandwidth per rail (loopback, pairs), per GPU (PCIe, NVLink), bus bandwidth by iteration."""
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.2))
    _per_index(
        axes[0],
        node,
        series,
        flagged,
        ("ib_write_bw.loopback", "ib_write_bw.pair"),
        "rail",
        "Gb/s",
        "ib_write_bw per rail (o loopback, x pairs)",
    )
    _per_index(
        axes[1],
        node,
        series,
        flagged,
        ("nvbandwidth.h2d", "nvbandwidth.d2h"),
        "gpu",
        "GB/s",
        "PCIe per GPU (o h2d, x d2h)",
    )
    _per_index(
        axes[2], node, series, flagged, ("nvbandwidth.d2d",), "gpu", "GB/s", "GPU-GPU per GPU (d2d read)"
    )
    ax = axes[3]
    for key, pts in sorted(series.items()):
        test, n, _c, peer = key
        if (test == "all_reduce.node" and n == node) or (
            test == "all_reduce.group" and node in peer.split(",")
        ):
            xs = [it for it, v in pts if v is not None]
            ys = [v for _, v in pts if v is not None]
            style = "-o" if test == "all_reduce.node" else "--s"
            ax.plot(
                xs,
                ys,
                style,
                color=BAD if key in flagged else OK,
                ms=4,
                label="node" if test == "all_reduce.node" else f"group {n}",
            )
    _min_span(ax, [float(y) for line in ax.lines for y in line.get_ydata()])
    ax.set_title("all_reduce bus bandwidth", fontsize=9)
    ax.set_xlabel("iteration")
    ax.set_ylabel("GB/s")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ax.lines:
        ax.legend(fontsize=7)
    fig.suptitle(node, fontsize=11)
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.16, top=0.82, wspace=0.3)
    return data_uri(fig)


def _per_index(
    ax: plt.Axes,
    node: str,
    series: Mapping[UnitKey, Sequence[tuple[int, float | None]]],
    flagged: set[UnitKey],
    tests: Sequence[str],
    prefix: str,
    unit: str,
    title: str,
) -> None:
    markers = ["o", "x", "^"]
    by: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
    for key, pts in series.items():
        test, n, comp, peer = key
        if test not in tests or not comp.startswith(prefix) or node not in (n, peer):
            continue
        idx = int(comp[len(prefix) :])
        for _it, v in pts:
            if v is not None:
                by[test].append((idx, v, key in flagged))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for i, test in enumerate(tests):
        dots = by.get(test, [])
        if not dots:
            continue
        off = (i - (len(tests) - 1) / 2) * 0.22
        ax.scatter(
            [p[0] + off for p in dots],
            [p[1] for p in dots],
            marker=markers[i % 3],
            s=16,
            c=[BAD if p[2] else OK for p in dots],
            alpha=0.75,
        )
    _min_span(ax, [p[1] for dots in by.values() for p in dots])
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(prefix)
    ax.set_ylabel(unit)


def _min_span(ax: plt.Axes, values: Sequence[float], rel: float = 0.05) -> None:
    """At least ±`rel` of the median on the y axis, so that healthy noise does not look like a cliff."""
    if not values:
        return
    mid = sorted(values)[len(values) // 2]
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, mid * (1 - rel)), max(hi, mid * (1 + rel)))
