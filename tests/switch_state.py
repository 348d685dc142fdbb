"""Recorded switch state as the plan renders it, built on the real captures (tests/fixtures/real): what a
switch configured by clusterforge's render would answer. For the read-back tests (switchcfg) and `fabric
check`'s switch-state/ folders (fabric). No real capture of a RoCE-configured switch was found, so each
output is a real capture's layout with the rendered values put in."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from clusterforge.hw import opensm_conf
from clusterforge.switchcfg.nvue import render_nvue
from clusterforge.switchcfg.policy import roce_qos
from clusterforge.switchcfg.ports import cumulus_port, sonic_port, switch_ports
from clusterforge.switchcfg.sonic import LOSSLESS_PROFILE, WRED, render_sonic
from tests.conftest import REAL

NVUE_APPLIED = REAL / "nvue-rest-root-applied-json__cl5.5.1-vx-default-qos-roce-off-workshop__excerpt1.txt"
NVUE_IFACES = REAL / "nvue-rest-interface-pydict__swp-down-mtu9216-eth0-1g-nvconfigmanager__excerpt1.txt"
SONIC_STATUS = next(REAL.glob("sonic-show-interfaces-status__as7816-64x-*"))
SONIC_ECN = REAL / "sonic-ecnconfig-l__spectrum-azure-lossless-wred-profile-nvidia-sonic-doc__1.txt"
SONIC_MMU = REAL / "sonic-mmuconfig-l__spectrum-buffer-pools-pg-lossless-profiles-nvidia-sonic-doc__1.txt"
SONIC_PFC = REAL / "sonic-show-pfc-counters__z9332-th3-grep-tx-a10-prio3-comma-sbi9430__excerpt1.txt"
OPENSM_CONF = REAL / "opensm-conf__opensm3.3.23-debian12-create-config-defaults-local__1.txt"
MTU = 9216  # what the captures' switches carry: more than any plan's RoCE MTU


def cumulus_ports(doc: dict[str, Any], switch: str) -> list[str]:
    sp = switch_ports(doc, switch)
    return [cumulus_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports]


def sonic_ports(doc: dict[str, Any], switch: str) -> list[str]:
    sp = switch_ports(doc, switch)
    return [sonic_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports]


def nvue_applied_as_rendered(doc: dict[str, Any], switch: str) -> dict[str, Any]:
    """The real VX tree with the rendered `nv set` tree applied on top (what `nv config apply` leaves)."""
    tree = json.loads(NVUE_APPLIED.read_text())
    want = render_nvue(doc, switch)["set"]
    for k, v in want["qos"].items():
        tree["qos"][k] = copy.deepcopy(v)
    for p in cumulus_ports(doc, switch):
        tree["interface"][p] = {
            "link": {"mtu": MTU, "state": {"up": {}}},
            "qos": copy.deepcopy(want["interface"][p]["qos"]),
            "type": "swp",
        }
    return tree


def _table(capture: str, rows: list[list[str]]) -> str:
    """`rows` in the layout of a captured tabulate table: its header and rule, cells right-aligned to the
    rule's dash runs as the capture's are."""
    lines = capture.splitlines()
    at = next(i for i, ln in enumerate(lines) if i > 0 and re.fullmatch(r"\s*-+(\s+-+)*\s*", ln))
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[at])]
    out = lines[at - 1 : at + 1]
    for cells in rows:
        line = ""
        for (_, end), cell in zip(spans, cells, strict=True):
            line = line.ljust(end - len(cell)) + cell
        out.append(line)
    return "\n".join(out) + "\n"


def sonic_as_rendered(doc: dict[str, Any], switch: str, mtu: int = MTU) -> dict[str, str]:
    """The outputs `fabric switch-readback --os sonic` reads, by file name, of `switch` running its render:
    every planned port up at the fabric's speed with `mtu`; the rendered WRED and lossless buffer profiles
    (beside the capture's own); pause frames on the lossless priority only."""
    sp = switch_ports(doc, switch)
    want = render_sonic(doc, switch)
    ports = sonic_ports(doc, switch)
    status = [
        [p, ",".join(str(4 * i + k) for k in range(4)), f"{sp.port_speed_gbps}G", str(mtu), f"etp{i + 1}",
         "routed", "up", "up", "OSFP", "N/A"]
        for i, p in enumerate(ports)
    ]  # fmt: skip
    ecn = SONIC_ECN.read_text().replace("AZURE_LOSSLESS", WRED)
    wred = want["WRED_PROFILE"][WRED]
    ecn = "\n".join(
        f"{ln.split()[0]:<24} {wred[ln.split()[0]]}" if ln.split() and ln.split()[0] in wred else ln
        for ln in ecn.splitlines()
    )
    b = want["BUFFER_PROFILE"][LOSSLESS_PROFILE]
    rule = "---------- -----------------------------------"
    mmu = SONIC_MMU.read_text().rstrip("\n") + "\n" + "\n".join(
        [f"Profile: {LOSSLESS_PROFILE}", rule, "dynamic_th 0", f"xon {b['xon']}", f"xoff {b['xoff']}",
         f"pool [BUFFER_POOL|{b['pool']}]", f"size {b['size']}", rule]
    )  # fmt: skip
    lossless = roce_qos(doc, sp.fabric).lossless_tc
    pfc = [[p, *("120" if prio == lossless else "0" for prio in range(8))] for p in ports]
    return {
        "show-interfaces-status.txt": _table(SONIC_STATUS.read_text(), status),
        "ecnconfig-l.txt": ecn + "\n",
        "mmuconfig-l.txt": mmu + "\n",
        "show-pfc-counters.txt": _table(SONIC_PFC.read_text(), pfc),
    }


def opensm_conf_patched(default: str, rendered: str) -> str:
    """The captured opensm.conf with each option clusterforge renders set in place (its line rewritten)."""
    want = opensm_conf.parse(rendered).options
    out = []
    for line in default.splitlines():
        key = line.split(" ", 1)[0]
        out.append(f"{key} {want[key]}" if not line.startswith("#") and key in want else line)
    return "\n".join(out) + "\n"
