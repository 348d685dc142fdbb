"""Records: the SQLite store of runs, results, part serials, certificates and pool events.

`Store` is the database; `clusterforge.records.certificate` builds, signs, verifies and writes
certificates (the pool checks certificates through it without importing the certify runner).
"""

from clusterforge.records.certificate import VerifyResult, verify
from clusterforge.records.model import (
    CheckResult,
    MergeReport,
    NodeResult,
    NodesBusy,
    Offender,
    Part,
    PartSighting,
    PoolEvent,
    RecordsError,
    Run,
    RunStateError,
    SchemaTooNew,
    Swap,
)
from clusterforge.records.runs import DEFAULT_LEASE_S
from clusterforge.records.schema import CURRENT_VERSION
from clusterforge.records.store import Store

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_LEASE_S",
    "CheckResult",
    "MergeReport",
    "NodeResult",
    "NodesBusy",
    "Offender",
    "Part",
    "PartSighting",
    "PoolEvent",
    "RecordsError",
    "Run",
    "RunStateError",
    "SchemaTooNew",
    "Store",
    "Swap",
    "VerifyResult",
    "verify",
]
