"""Parsers of hardware-tool output (pure functions, typed frozen results).

Every parser raises :class:`ParseError` (a ``ValueError``) on unrecognised or truncated input rather
than returning defaults. One module per tool; see ``docs/hw-parsers.md``.

The modules load when first used (``from clusterforge.hw import xid``, or ``clusterforge.hw.xid``): the node's
health check imports one parser and pays for that one only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import ParseError

if TYPE_CHECKING:
    from . import (
        cpupower,
        dcb,
        dcgm_exporter,
        dcgmi,
        findmnt,
        fio,
        gdscheck,
        ibdev2netdev,
        iblinkinfo,
        ibmad,
        ibnetdiscover,
        ibqueryerrors,
        ibstat,
        ibstatus,
        ibv_devinfo,
        iproute,
        lldp,
        lldp_frame,
        lsblk,
        lscpu,
        mlnx_qos,
        mlxconfig,
        mlxfwmanager,
        nccl_tests,
        nic_counters,
        nvbandwidth,
        nvidia_smi,
        nvue_show,
        ofed_info,
        opensm_conf,
        packages,
        perftest,
        pkgversion,
        procfs,
        rdma_link,
        show_gids,
        sonic_show,
        xid,
    )

__all__ = [
    "ParseError",
    "cpupower",
    "dcb",
    "dcgm_exporter",
    "dcgmi",
    "findmnt",
    "fio",
    "gdscheck",
    "ibdev2netdev",
    "iblinkinfo",
    "ibmad",
    "ibnetdiscover",
    "ibqueryerrors",
    "ibstat",
    "ibstatus",
    "ibv_devinfo",
    "iproute",
    "lldp",
    "lldp_frame",
    "lsblk",
    "lscpu",
    "mlnx_qos",
    "mlxconfig",
    "mlxfwmanager",
    "nccl_tests",
    "nic_counters",
    "nvbandwidth",
    "nvidia_smi",
    "nvue_show",
    "ofed_info",
    "opensm_conf",
    "packages",
    "perftest",
    "pkgversion",
    "procfs",
    "rdma_link",
    "show_gids",
    "sonic_show",
    "xid",
]
_MODULES = frozenset(__all__) - {"ParseError"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
