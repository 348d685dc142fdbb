"""Pool managers behind one interface (`PoolManager`): `file`, `slurm`, `kubernetes`; admission policy.

Admission (`clusterforge.pool.admission`) checks certificates through `clusterforge.records` only.
"""

from clusterforge.pool.base import (
    HOLD_REASON,
    PREFIX,
    NodeState,
    PoolError,
    PoolManager,
    ResumeRefused,
    reason_for_checks,
    sanitize_reason,
    wait_for,
)

__all__ = [
    "HOLD_REASON",
    "PREFIX",
    "NodeState",
    "PoolError",
    "PoolManager",
    "ResumeRefused",
    "reason_for_checks",
    "sanitize_reason",
    "wait_for",
]
