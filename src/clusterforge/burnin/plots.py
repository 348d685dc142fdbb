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

from clusterforge.burnin.analysis import UnitStats

UnitKey = tuple[str, str, str, str]
BAD, OK, GREY = "#c62828", "#1565c0", "#9e9e9e"


def data_uri(fig: Figure, dpi: int = 80) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _label(key: UnitKey) -> str:
    _t, node, comp, peer = key
    if peer and "," in peer:
        return node
    return " ".join(x for x in (node, comp, f"~{peer}" if peer else "") if x)


def fleet_box(title: str, unit: str, units: Mapping[UnitKey, UnitStats], flagged: set[UnitKey]) -> str:
    """One fleet: a box plot of its units' levels, every unit a dot, flagged units red and named."""
    fig, ax = plt.subplots(figsize=(7.5, 2.2 + 0.12 * min(len(flagged), 10)))
    levels = [(k, s.level) for k, s in sorted(units.items()) if s.level is not None]
    values = [v for _, v in levels]
    if values:
        ax.boxplot(values, vert=False, widths=0.5, showfliers=False)
    for i, (k, v) in enumerate(levels):
        jitter = 1 + 0.18 * (((i * 7919) % 13) / 12 - 0.5)
        bad = k in flagged
        ax.plot(v, jitter, "o", ms=6 if bad else 4, color=BAD if bad else OK, alpha=0.9 if bad else 0.6)
        if bad:
            ax.annotate(
                _label(k), (v, jitter), xytext=(4, 6), textcoords="offset points", fontsize=8, color=BAD
            )
    s0 = next(iter(units.values()), None)
    if s0 is not None and s0.fleet_median is not None:
        ax.axvline(s0.fleet_median, color=GREY, ls="--", lw=1)
    ax.set_yticks([])
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=10)
    return data_uri(fig)


def node_figure(
    node: str,
    series: Mapping[UnitKey, Sequence[tuple[int, float | None]]],
    flagged: set[UnitKey],
) -> str:
    """Per node: bandwidth per rail (loopback and pairs), per GPU (nvbandwidth), bus bandwidth over time."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
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
        ("nvbandwidth.h2d", "nvbandwidth.d2h", "nvbandwidth.d2d"),
        "gpu",
        "GB/s",
        "nvbandwidth per GPU (o h2d, x d2h, ^ d2d)",
    )
    ax = axes[2]
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
    ax.set_title("all_reduce bus bandwidth over iterations", fontsize=9)
    ax.set_xlabel("iteration")
    ax.set_ylabel("GB/s")
    if ax.lines:
        ax.legend(fontsize=7)
    fig.suptitle(node, fontsize=11)
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
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(prefix)
    ax.set_ylabel(unit)
