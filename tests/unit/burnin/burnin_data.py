"""Plans of the example specs (tests/conftest.py builds them once per process) and synthetic burn-in
measurements."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from clusterforge.burnin.model import Measurement
from tests.conftest import example_plan

SPECS = ["lab", "h100-ib-1su", "h100-roce-2su", "h100-ib-4su", "b200-ib-16su"]
_PLANS: dict[str, dict[str, Any]] = {}


def plan_of(name: str) -> dict[str, Any]:
    """A shallow copy of the example plan's document, one per process (the burn-in tests share it)."""
    if name not in _PLANS:
        _PLANS[name] = dict(example_plan(name).doc)
    return _PLANS[name]


Faults = dict[tuple[str, str, str], float]  # (node, test-prefix, component) -> factor


def synthetic(
    plan: dict[str, Any],
    iterations: int,
    *,
    factors: Faults | None = None,
    noisy: tuple[str, ...] = (),
    seed: int = 1,
    sigma: float = 0.004,
    noisy_sigma: float = 0.015,
    extra: Callable[[int], list[Measurement]] | None = None,
) -> list[tuple[int, Measurement]]:
    """Measurements shaped like the lab's: nominal x fault factor x seeded gaussian noise, per iteration."""
    from clusterforge.burnin.pairs import select_pairs

    rng = random.Random(seed)
    factors = factors or {}
    nodes = [n["name"] for n in plan["nodes"]]

    def v(node: str, test: str, comp: str, nominal: float, peer: str = "") -> float:
        f = factors.get((node, test, comp), 1.0)
        if peer:
            f = min(
                f,
                factors.get((peer, test, comp), 1.0),
                factors.get((node, "nic", comp), 1.0),
                factors.get((peer, "nic", comp), 1.0),
            )
        elif test == "ib_write_bw.loopback":
            f = min(f, factors.get((node, "nic", comp), 1.0))
        s = noisy_sigma if node in noisy or peer in noisy else sigma
        return nominal * f * (1 + rng.gauss(0, s))

    rows: list[tuple[int, Measurement]] = []
    for it in range(1, iterations + 1):
        for n in nodes:
            gf = {f"gpu{g}": factors.get((n, "gpu", f"gpu{g}"), 1.0) for g in range(8)}
            rows.append((it, Measurement("dcgm.diag", n, value=1.0, unit="pass")))
            for g in range(8):
                for test, nominal in (
                    ("nvbandwidth.h2d", 55.2),
                    ("nvbandwidth.d2h", 55.0),
                    ("nvbandwidth.d2d", 371.0),
                ):
                    rows.append(
                        (
                            it,
                            Measurement(
                                test,
                                n,
                                f"gpu{g}",
                                value=v(n, test, f"gpu{g}", nominal) * gf[f"gpu{g}"],
                                unit="GB/s",
                            ),
                        )
                    )
                for kind in ("corrected", "uncorrected"):
                    rows.append((it, Measurement(f"ecc.{kind}", n, f"gpu{g}", value=0.0, unit="count")))
            for r in range(8):
                rows.append(
                    (
                        it,
                        Measurement(
                            "ib_write_bw.loopback",
                            n,
                            f"rail{r}",
                            value=v(n, "ib_write_bw.loopback", f"rail{r}", 394.0),
                            unit="Gb/s",
                        ),
                    )
                )
                rows.append(
                    (it, Measurement("ibcounter.symbol_error", n, f"rail{r}", value=0.0, unit="count"))
                )
            rows.append(
                (
                    it,
                    Measurement(
                        "all_reduce.node",
                        n,
                        value=v(n, "all_reduce.node", "", 480.0) * min(gf.values()),
                        unit="GB/s",
                    ),
                )
            )
        for p in select_pairs(plan):
            rows.append(
                (
                    it,
                    Measurement(
                        "ib_write_bw.pair",
                        p.a,
                        f"rail{p.rail}",
                        p.b,
                        value=v(p.a, "ib_write_bw.pair", f"rail{p.rail}", 394.0, p.b),
                        unit="Gb/s",
                    ),
                )
            )
        if extra is not None:
            rows += [(it, m) for m in extra(it)]
    return rows
