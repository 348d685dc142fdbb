"""Time plan_fabric for ~1k, ~10k and ~100k GPU endpoints and print the results (no assertions).

.venv/bin/python bench/bench_fabric.py
"""

from __future__ import annotations

import gc
import time
import tracemalloc

from clusterforge.plan.fabric import FabricInput, plan_fabric

CASES = [  # label, nodes, rails, radix
    ("1k GPUs", 128, 8, 64),
    ("10k GPUs", 1250, 8, 64),
    ("100k GPUs", 12_500, 8, 144),
]


def main(repeats: int = 3) -> None:
    print(
        f"{'case':<10} {'nodes':>6} {'radix':>5} {'tiers':>5} {'leaf':>5} {'spine':>5} {'core':>5} "
        f"{'cables':>7} {'best s':>8} {'peak MiB':>9}"
    )
    for label, n, rails, radix in CASES:
        inp = FabricInput("ib0", "infiniband", tuple(f"node{i:05d}" for i in range(n)), rails, radix=radix)
        best = float("inf")
        for _ in range(repeats):
            gc.collect()
            t0 = time.perf_counter()
            fab = plan_fabric(inp)
            best = min(best, time.perf_counter() - t0)
            del fab
        gc.collect()
        tracemalloc.start()
        fab = plan_fabric(inp)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"{label:<10} {n:>6} {radix:>5} {fab.tiers:>5} {fab.leaves:>5} {fab.spines:>5} {fab.cores:>5} "
            f"{len(fab.links):>7} {best:>8.3f} {peak / 2**20:>9.1f}"
        )


if __name__ == "__main__":
    main()
