"""Parsers for ``nvidia-smi`` output: ``-q``, ``--query-gpu`` CSV, ``topo -m`` and ``nvlink -s/-e``."""

from .nvlink import NvLinkErrorsGpu, NvLinkGpu, NvLinkLink, parse_nvlink_errors, parse_nvlink_status
from .q import EccCounts, GpuProcess, GpuQ, NvidiaSmiQ, RemappedRows, RetiredPages, parse_q
from .query_csv import parse_query_csv
from .topo import GpuAffinity, Topology, parse_topo

__all__ = [
    "EccCounts",
    "GpuAffinity",
    "GpuProcess",
    "GpuQ",
    "NvLinkErrorsGpu",
    "NvLinkGpu",
    "NvLinkLink",
    "NvidiaSmiQ",
    "RemappedRows",
    "RetiredPages",
    "Topology",
    "parse_nvlink_errors",
    "parse_nvlink_status",
    "parse_q",
    "parse_query_csv",
    "parse_topo",
]
