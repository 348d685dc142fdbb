"""Meta-tests: every real fixture is claimed by a parser, cited by a value test, listed in SOURCES.md, and
parses (strictly, or - for the fixtures SOURCES.md marks as excerpts/cut/failed runs - in the documented
way)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterforge.hw import (
    ParseError,
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
    procfs,
    rdma_link,
    show_gids,
    sonic_show,
    xid,
)
from tests.conftest import REAL

from .conftest import LOCAL_DIR, real_dir

Parser = Callable[..., Any]


def _query_csv(text: str, *, partial: bool = False) -> Any:
    fields = [cell.split(" [")[0] for cell in text.splitlines()[0].split(", ")]
    return nvidia_smi.parse_query_csv(text, fields, partial=partial)


#: fixture-name prefix (text before the first "__") -> parser
PARSERS: dict[str, Parser] = {
    "cpupower-frequency-info": cpupower.parse_cpupower_frequency_info,
    "cpupower-idle-info": cpupower.parse_cpupower_idle_info,
    "dcb-app-json": dcb.parse_app,
    "dcgm-exporter-metrics": dcgm_exporter.parse,
    "dcgmi-diag": dcgmi.parse_diag,
    "dcgmi-diag-json": dcgmi.parse_diag,
    "dmesg-aer": xid.parse,
    "findmnt-json": findmnt.parse_json,
    "fio-json": fio.parse,
    "gdscheck-p": gdscheck.parse,
    "lsblk-json": lsblk.parse,
    "mount-grep-nfs": findmnt.parse_mount_lines,
    "dpkg-l-nvidia": packages.parse_dpkg_l,
    "dpkg-query-W-f-package-version-status": packages.parse_dpkg_query,
    "rpm-qa-qf-name-epoch-version-release-arch": packages.parse_rpm_query,
    "rpm-qa-qf-name-epochnum-version-release-arch": packages.parse_rpm_query,
    "rpm-q-qf-not-installed": packages.parse_rpm_query,
    "ethtool-S": nic_counters.parse_ethtool_stats,
    "hw-counters-ls": nic_counters.parse_hw_counters_listing,
    "iblinkinfo": iblinkinfo.parse,
    "ibnetdiscover": ibnetdiscover.parse,
    "ibnetdiscover-p": ibnetdiscover.parse_ports,
    "ibportstate": ibmad.parse_portinfo,
    "ibqueryerrors": ibqueryerrors.parse,
    "lldpcli-json0": lldp.parse,
    "lldpctl": lldp.parse,
    "perfquery-E": ibmad.parse_perfquery,
    "perfquery-x": ibmad.parse_perfquery,
    "rdma-statistic": nic_counters.parse_rdma_statistic,
    "smpquery-nodeinfo": ibmad.parse_nodeinfo,
    "smpquery-failed": ibmad.parse_query_failed,
    "ib_read_lat": perftest.parse_lat,
    "ib_write_lat": perftest.parse_lat,
    "ib_write_bw": perftest.parse_bw,
    "ibdev2netdev": ibdev2netdev.parse,
    "ibstat": ibstat.parse,
    "ibstatus": ibstatus.parse,
    "ibv_devinfo": ibv_devinfo.parse,
    "ip-j-route": iproute.parse,
    "ip-j-route-default": iproute.parse,
    "lscpu": lscpu.parse_lscpu,
    "meminfo-huge": procfs.parse_meminfo,
    "mlnx_qos": mlnx_qos.parse,
    "mlxconfig-q": mlxconfig.parse_query,
    "mlxfwmanager": mlxfwmanager.parse,
    "nccl-all_gather_perf": nccl_tests.parse,
    "nccl-all_reduce_perf": nccl_tests.parse,
    "nccl-alltoall_perf": nccl_tests.parse,
    "nvbandwidth": nvbandwidth.parse,
    "nvidia-smi-nvlink-e": nvidia_smi.parse_nvlink_errors,
    "nvidia-smi-nvlink-s": nvidia_smi.parse_nvlink_status,
    "nvidia-smi-q": nvidia_smi.parse_q,
    "nvidia-smi-query-gpu": _query_csv,
    "nvidia-smi-topo": nvidia_smi.parse_topo,
    "ofed_info-s": ofed_info.parse,
    "opensm-conf": opensm_conf.parse,
    "rdma-link": rdma_link.parse,
    "show_gids": show_gids.parse,
    "xid": xid.parse,
    "nvue-rest-root-applied-json": nvue_show.parse_applied,
    # the capture is the test author's Python literal of the JSON body (SOURCES.md), not JSON text
    "nvue-rest-interface-pydict": lambda text: nvue_show.interfaces_from(ast.literal_eval(text)),
    "sonic-ecnconfig-l": lambda text: sonic_show.parse_profiles(text, "ecnconfig -l"),
    "sonic-mmuconfig-l": sonic_show.parse_profiles,
    "sonic-show-interfaces-status": sonic_show.parse_interfaces_status,
    "sonic-show-pfc-counters": sonic_show.parse_pfc_counters,
    "sonic-show-queue-counters": sonic_show.parse_queue_counters,
    "tcpdump-xx-lldp": lldp_frame.parse_tcpdump,
}

#: Captured outputs in tests/fixtures/real/ that no parser reads yet, by the feature (issue) that will:
#: a capture is added here deliberately, and leaves when its parser lands in PARSERS.
PENDING: dict[str, str] = {
    "dcgm-exporter-counters-csv": "#21 observability: dcgm-exporter fields (tests/unit/monitoring)",
    "ibdiagnet": "#19 fabric check",
    "lspci-vvv": "#17 ACS certification",
    "node-exporter-metrics": "#21 observability: node-exporter series names (tests/unit/monitoring)",
    "node-exporter-textfile": "#21 observability: textfile collector",
    "nvidia-smi-q-d-performance": "#21 passive health: throttle reasons",
    "nvidia-smi-q-d-row-remapper": "#21 passive health: row remaps",
    "nvidia-smi-q-d-temperature": "#21 passive health: temperatures",
    "nvidia-smi-query-remapped-rows": "#21 passive health: row remaps",
    "nvme-list": "#22 storage: scratch devices",
}

#: Output formats a parser reads that no public source has a real capture of yet: tested only on outputs
#: CONSTRUCTED from the tool's source code (the test module says which). A capture found later goes to
#: tests/fixtures/real/ under the prefix named here (its parser is already in PARSERS) and leaves this list.
CONSTRUCTED: dict[str, str] = {
    "dcb-pfc-json": "dcb -j pfc show dev X (iproute2 dcb/dcb_pfc.c print code), test_hw_dcb.py",
    "dcb-apptrust-json": "dcb -j apptrust show dev X (dcb/dcb_apptrust.c print code), test_hw_dcb.py",
}
CONSTRUCTED_PARSERS: dict[str, Parser] = {
    "dcb-pfc-json": dcb.parse_pfc,
    "dcb-apptrust-json": dcb.parse_apptrust,
}

#: Fixtures whose strict parse must fail, and why (from SOURCES.md); they parse with partial=True
#: (or, for the ibpanic capture, with ibstat.parse_report).
STRICT_FAILS: dict[str, str] = {
    "dcgm-exporter-metrics__h100-droplet-docker-3.3.8-digitalocean-doc__excerpt2.txt": (
        "EXCERPT: ends with [...]"
    ),
    "dcgm-exporter-metrics__vgpu-h100-20c-k8s-pod-labels-portforward-noise-tkr-doc__1.txt": (
        "kubectl port-forward's noise line first"
    ),
    "nvidia-smi-q__a100-80gb-remap-pending-stas00__excerpt1.txt": "EXCERPT: no banner, [...] elisions",
    "nvidia-smi-query-gpu__h100-vbios-stas00__1.txt": "rows elided by the author as [...]",
    "nvidia-smi-nvlink-e__h100-stas00__excerpt1.txt": "EXCERPT: links 2-16 elided",
    "nvidia-smi-nvlink-s__h100-stas00__excerpt1.txt": "EXCERPT: links 1-16 elided",
    "nvidia-smi-nvlink-s__gb200-18links-53GBs-k8stestinfra371__excerpt7.txt": "EDITED: ends with ...",
    "dcgmi-diag__l40s-x4-dcgm423-pcie-fail-internal-error-dcgm253__7.txt": "paste has no closing border",
    "dcgmi-diag__r2-gpumem-fail-thermal-stas00__excerpt2.txt": "EXCERPT: GPU Memory rows only, last row cut",
    "nvbandwidth__gb300-dgxstation-c2c-stas00__excerpt4.txt": "EXCERPT between [...] markers",
    "mlnx_qos__roce-rdma0-dscp-husky__excerpt2.txt": "EXCERPT: stops after dscp2prio",
    "ibstat__a100-azure-cx6vf-hdr-ibpanic-gpud__5.txt": "ibstat failed part-way (ibpanic, exit 255)",
    "mlxconfig-q__cx5-default-current-nextboot-star-shsdocs__excerpt.txt": "EXCERPT: rows elided with ...",
}

HERE = Path(__file__).resolve().parent


def _real_files() -> list[str]:
    if not REAL.is_dir():
        return []
    return sorted(p.name for p in REAL.iterdir() if p.is_file() and p.name != "SOURCES.md")


def _local_files() -> list[str]:
    return sorted(p.name for p in LOCAL_DIR.iterdir() if p.is_file())


def _prefix(name: str) -> str:
    return name.split("__", 1)[0]


def test_real_fixture_folder_matches_sources_md() -> None:
    """Every file listed in SOURCES.md is present (none lost), and vice versa (next test)."""
    sources = (real_dir() / "SOURCES.md").read_text(encoding="utf-8")
    listed = {
        line.split(" | ")[0].removeprefix("| ") for line in sources.splitlines() if line.startswith("| ")
    }
    listed.discard("file")
    assert listed == set(_real_files())
    assert len(listed) >= 96


def test_every_fixture_prefix_has_a_parser() -> None:
    real_dir()
    unclaimed = {_prefix(n) for n in _real_files() + _local_files() if _prefix(n) not in PARSERS}
    assert unclaimed == set(PENDING), "a capture with no parser must be listed in PENDING (and leave it)"
    assert not set(PENDING) & set(PARSERS), "a prefix with a parser is no longer pending"


def test_constructed_formats_have_parsers_and_no_real_capture_yet() -> None:
    """A format tested only on constructed output has a parser; a real capture takes it off the list."""
    assert set(CONSTRUCTED) == set(CONSTRUCTED_PARSERS)
    captured = {_prefix(n) for n in _real_files()}
    assert not set(CONSTRUCTED) & captured, "a real capture exists: move its prefix to PARSERS"


def test_every_fixture_is_cited_by_a_value_test() -> None:
    real_dir()
    tests_text = "\n".join(
        p.read_text(encoding="utf-8") for p in HERE.glob("test_hw_*.py") if p.name != Path(__file__).name
    )
    missing = [n for n in _real_files() + _local_files() if n not in tests_text and _prefix(n) not in PENDING]
    assert missing == []


def test_every_real_fixture_has_a_sources_row() -> None:
    sources = (real_dir() / "SOURCES.md").read_text(encoding="utf-8")
    missing = [n for n in _real_files() if f"| {n} |" not in sources]
    assert missing == []


@pytest.mark.parametrize("name", [n for n in _real_files() + _local_files() if _prefix(n) not in PENDING])
def test_fixture_parses_as_documented(name: str) -> None:
    path = (LOCAL_DIR / name) if name in _local_files() else (real_dir() / name)
    text = path.read_text(encoding="utf-8")
    parser = PARSERS[_prefix(name)]
    if name not in STRICT_FAILS:
        assert parser(text) is not None
        return
    with pytest.raises(ParseError):
        parser(text)
    if parser is ibstat.parse:
        assert ibstat.parse_report(text).errors
    else:
        assert parser(text, partial=True) is not None
