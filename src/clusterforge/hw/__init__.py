"""Parsers of hardware-tool output (pure functions, typed frozen results).

Every parser raises :class:`ParseError` (a ``ValueError``) on unrecognised or truncated input rather
than returning defaults. One module per tool; see ``docs/hw-parsers.md``.
"""

from . import (
    cpupower,
    dcgmi,
    ibdev2netdev,
    iblinkinfo,
    ibmad,
    ibnetdiscover,
    ibqueryerrors,
    ibstat,
    ibstatus,
    ibv_devinfo,
    lldp,
    lscpu,
    mlnx_qos,
    mlxconfig,
    nccl_tests,
    nic_counters,
    nvbandwidth,
    nvidia_smi,
    perftest,
    procfs,
    rdma_link,
    show_gids,
    xid,
)
from .errors import ParseError

__all__ = [
    "ParseError",
    "cpupower",
    "dcgmi",
    "ibdev2netdev",
    "iblinkinfo",
    "ibmad",
    "ibnetdiscover",
    "ibqueryerrors",
    "ibstat",
    "ibstatus",
    "ibv_devinfo",
    "lldp",
    "lscpu",
    "mlnx_qos",
    "mlxconfig",
    "nccl_tests",
    "nic_counters",
    "nvbandwidth",
    "nvidia_smi",
    "perftest",
    "procfs",
    "rdma_link",
    "show_gids",
    "xid",
]
