"""Parsers of hardware-tool output (pure functions, typed frozen results).

Every parser raises :class:`ParseError` (a ``ValueError``) on unrecognised or truncated input rather
than returning defaults. One module per tool; see ``docs/hw-parsers.md``.
"""

from . import (
    cpupower,
    dcgmi,
    ibdev2netdev,
    ibstat,
    ibstatus,
    ibv_devinfo,
    lscpu,
    mlnx_qos,
    mlxconfig,
    mlxfwmanager,
    nccl_tests,
    nvbandwidth,
    nvidia_smi,
    ofed_info,
    packages,
    perftest,
    pkgversion,
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
    "ibstat",
    "ibstatus",
    "ibv_devinfo",
    "lscpu",
    "mlnx_qos",
    "mlxconfig",
    "mlxfwmanager",
    "nccl_tests",
    "nvbandwidth",
    "nvidia_smi",
    "ofed_info",
    "packages",
    "perftest",
    "pkgversion",
    "procfs",
    "rdma_link",
    "show_gids",
    "xid",
]
