"""`--shard i/n`: split the hosts of one run across n controllers, deterministically and disjointly."""

from __future__ import annotations

import re

from clusterforge.errors import InputError, Problem

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    m = _SHARD.match(text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise InputError(
            [
                Problem(
                    "--shard",
                    "",
                    "i/n with 1 <= i <= n, e.g. 2/4",
                    repr(text),
                    "give this controller's shard number and the shard count",
                )
            ],
            "bad argument",
        )
    return int(m.group(1)), int(m.group(2))


def select(hosts: list[str], shard: str | None) -> list[str]:
    """Shard i of n: contiguous blocks of the host list in plan order (racks and SUs stay together);
    the n shards partition the hosts, so the union of their runs is the unsharded run."""
    if not shard:
        return list(hosts)
    i, n = parse_shard(shard)
    size, extra = divmod(len(hosts), n)
    start = (i - 1) * size + min(i - 1, extra)
    return hosts[start : start + size + (1 if i <= extra else 0)]


def forks_for(hosts: int, cap: int = 64) -> int:
    """Forks sized from the inventory: every host of a batch at once, up to a cap (Ansible's default is 5)."""
    return max(5, min(hosts, cap))
