"""Rolling batches from the spec's `rollout` policy (Ansible's `serial` semantics)."""

from __future__ import annotations

import math


def batch_size(serial: int | str, total: int) -> int:
    if isinstance(serial, str) and serial.endswith("%"):
        return max(1, math.floor(total * int(serial[:-1]) / 100))
    return max(1, int(serial))


def batches(hosts: list[str], serial: int | str) -> list[list[str]]:
    size = batch_size(serial, len(hosts))
    return [hosts[i : i + size] for i in range(0, len(hosts), size)]


def over_fail_limit(failed: int, total: int, max_fail_percentage: int) -> bool:
    """Ansible's rule: abort when the failed share EXCEEDS max_fail_percentage."""
    return total > 0 and failed * 100 > max_fail_percentage * total


#: pool states in which a node runs no job: rebooting it takes nothing out of service. `draining` still runs
#: jobs; `unknown` is a node the pool does not know yet (never admitted) or cannot tell about.
OUT_OF_SERVICE = frozenset({"drained", "down", "unknown"})


def rollout_batches(
    hosts: list[str], serial: int | str, out_of_service: set[str] | frozenset[str]
) -> list[list[str]]:
    """The provision batches: nodes out of service (nothing to protect: a first provision, a drained node)
    converge together in the first batch; nodes in service roll in batches of ``serial``, after them, so a
    broken change fails on idle nodes first. Order within each group is the hosts' order."""
    idle = [h for h in hosts if h in out_of_service]
    busy = [h for h in hosts if h not in out_of_service]
    return ([idle] if idle else []) + (batches(busy, serial) if busy else [])
