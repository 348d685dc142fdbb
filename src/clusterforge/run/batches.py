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
